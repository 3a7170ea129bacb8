package dev.handoff.outbox.testkit;

import dev.handoff.outbox.ShardId;
import java.time.Duration;

/**
 * Test seam: the points where a test injects real faults into a relay, given to
 * {@link dev.handoff.outbox.RelayBuilder#faults(RelayFaults)}. A hook that throws {@link SimulatedCrash} kills the
 * relay's thread right there, as a process crash would (for example after Redis accepted a batch and before the rows
 * were marked published); anything else it throws is a failure of that cycle, which the relay retries. Not for
 * production use. Hooks run on the relay's thread and must be thread-safe if shared.
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
