package dev.handoff.consumer;

/**
 * A hook the consumers call at the points where a crash matters, for tests and demos that inject real faults there;
 * given to the builders' {@code faults(...)}. A no-op by default. What the hook does is the caller's business, and
 * the consumer treats it as it treats the same thing anywhere in a batch: a hook that parks the thread freezes the
 * worker as a handler that never returns would (its batch stays pending and leased to it while its consumer runs;
 * another consumer claims it once that consumer is closed or its process dies); one that throws inside the
 * transaction fails the batch like a database error, nothing counted against the messages; a
 * {@link VirtualMachineError} ends the worker's thread where it is thrown, with no rollback of what committed and no
 * acknowledgement, and the consumer's worker check starts a new thread, which reads the unfinished work again. A
 * synchronous {@code pollOnce()} throws what the hook threw.
 *
 * <p>Both consumers call the batch's points ({@link Point#BEFORE_COMMIT}, {@link Point#AFTER_COMMIT}); the list
 * consumer also calls the points of its reads, its housekeeping and its close, so that a hook can freeze all of it
 * as a process that stopped. Its housekeeping is one thread (heartbeats, reaper passes, the worker check, the inbox
 * purge): a hook that parks it there stops all of them, and once the heartbeats expire the other consumers' reapers
 * return what its processing lists hold, as for a dead process.
 *
 * <p>Hooks run on the worker threads, on the list consumer's housekeeping thread and on the thread that closes it,
 * and must be thread-safe.
 */
@FunctionalInterface
public interface ConsumerFaults {

  /** Where the hook is called. */
  enum Point {
    /** Inside the batch transaction: markers and handler effects written, not committed. */
    BEFORE_COMMIT,
    /** The batch committed, nothing acknowledged yet. */
    AFTER_COMMIT,
    /**
     * List consumer: a worker is about to read, at the start of each step and before any Redis command of it (its
     * processing lists after a restart, its retries that are due, new elements). A hook that throws fails the step
     * before it took anything.
     */
    BEFORE_READ,
    /**
     * List consumer: its housekeeping thread is about to renew the workers' heartbeats, every
     * {@code heartbeatInterval} (the first beat, which {@code start()} or the first {@code pollOnce()} sends on the
     * caller's thread, calls no hook). A hook that throws skips that renewal, as a failure of Redis would.
     */
    BEFORE_HEARTBEAT,
    /** List consumer, started: its housekeeping thread is about to run a reaper pass. A hook that throws skips it. */
    BEFORE_REAP,
    /**
     * List consumer: {@code close()}, on the thread that closes, is about to return what the workers' processing
     * lists still hold to the head of the lists and remove their heartbeats and registrations. A hook that throws an
     * exception there leaves all of it to another consumer's reaper, as a close whose Redis failed does; close then
     * goes on and closes the connections.
     */
    BEFORE_GIVE_BACK
  }

  /** No faults: the default. */
  ConsumerFaults NONE = point -> {};

  void at(Point point);
}
