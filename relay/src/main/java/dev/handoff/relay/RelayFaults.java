package dev.handoff.relay;

import dev.handoff.core.ShardId;
import java.time.Duration;

/**
 * Hooks the relay calls at its crash points, for tests and demos that inject real faults there; given to
 * {@link RelayBuilder#faults(RelayFaults)}. Every hook is a no-op by default. What a hook does is the caller's
 * business, and the relay treats it as it treats the same thing anywhere in a cycle: a hook that parks the thread
 * freezes the relay (its leases lapse after two TTLs without a completed cycle); one that throws fails the cycle,
 * which is retried after a pause, with what it wrote sent again under the same IDs; a {@link VirtualMachineError}
 * ends the relay's thread where it is thrown, with no clean-up, as a crash of the process would. Hooks run on the
 * relay's thread and must be thread-safe if shared.
 */
public interface RelayFaults {

  /** No faults: the default. */
  RelayFaults NONE = new RelayFaults() {};

  /** Called after a batch got its stream IDs (committed) and before it is written to Redis. */
  default void beforeStreamWrite(ShardId shard, int rows) {}

  /** Called after a batch was written to Redis and before the database hears of it. */
  default void afterStreamWrite(ShardId shard, int rows) {}

  /**
   * Called inside a cycle's transaction, before its commit, once it holds the marks of the batches the previous
   * cycle wrote ({@code marked}) and the assignments of the next ones ({@code assigned} shards asked); these
   * usually go to the database with the {@code COMMIT}, in one round trip, after this call. A crash here leaves
   * neither the marks nor the assignments.
   */
  default void beforeCycleCommit(int marked, int assigned) {}

  /**
   * Called when a started relay's cycle failed, with the pause it takes before the next cycle: the pause doubles
   * with each failure in a row (from 100 ms, up to five idle poll intervals), so that a failure that repeats (a
   * refused permission, say) costs a few attempts a minute, not a busy loop.
   */
  default void afterFailedCycle(Throwable error, Duration pause) {}
}
