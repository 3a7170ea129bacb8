package dev.handoff.consumer.internal;

/**
 * Test-only fault injection: called at the points where a crash matters, so that a test can make the consumer
 * "die" there (by throwing an {@link Error}) and then look at the real database and pending-list state.
 */
@FunctionalInterface
public interface FaultHook {

  /** Where the hook is called. */
  enum Point {
    /** Inside the batch transaction: markers and handler effects written, not committed. */
    BEFORE_COMMIT,
    /** The batch committed, nothing acknowledged yet. */
    AFTER_COMMIT
  }

  FaultHook NONE = point -> {};

  void at(Point point);
}
