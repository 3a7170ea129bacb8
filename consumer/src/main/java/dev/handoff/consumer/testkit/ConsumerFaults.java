package dev.handoff.consumer.testkit;

/**
 * Test seam: called at the points of a batch where a crash matters, given to the consumers' builders
 * ({@code faults(...)}). A hook that throws {@link dev.handoff.outbox.testkit.SimulatedCrash} kills the worker right
 * there, as a killed process would, so that a test (or a demo) can then look at the real database and Redis state;
 * anything else it throws fails the batch like a database error. Not for production use. Hooks run on the worker
 * threads and must be thread-safe when there are several workers.
 */
@FunctionalInterface
public interface ConsumerFaults {

  /** Where the hook is called. */
  enum Point {
    /** Inside the batch transaction: markers and handler effects written, not committed. */
    BEFORE_COMMIT,
    /** The batch committed, nothing acknowledged yet. */
    AFTER_COMMIT
  }

  /** No faults: the default. */
  ConsumerFaults NONE = point -> {};

  void at(Point point);
}
