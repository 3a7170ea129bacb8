package dev.handoff.consumer;

/**
 * A hook the consumers call at the points of a batch where a crash matters, for tests and demos that inject real
 * faults there; given to the builders' {@code faults(...)}. A no-op by default. What the hook does is the caller's
 * business, and the consumer treats it as it treats the same thing anywhere in a batch: a hook that parks the thread
 * freezes the worker as a handler that never returns would (its batch stays pending and leased to it while its
 * consumer runs; another consumer claims it once that consumer is closed or its process dies); one that throws inside
 * the transaction fails the batch like a database error, nothing counted against the messages; a
 * {@link VirtualMachineError} ends the worker's thread where it is thrown, with no rollback of what committed and no
 * acknowledgement, and the consumer's worker check starts a new thread, which reads the unfinished work again. A
 * synchronous {@code pollOnce()} throws what the hook threw. Hooks run on the worker threads and must be thread-safe
 * when there are several workers.
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
