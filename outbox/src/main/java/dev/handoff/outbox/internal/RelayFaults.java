package dev.handoff.outbox.internal;

import dev.handoff.outbox.ShardId;

/**
 * Points where tests inject real faults into a relay (for example an {@link Error} that kills its thread right
 * after Redis accepted a batch and before the rows were marked published). Not for production use.
 */
public interface RelayFaults {

  RelayFaults NONE = new RelayFaults() {};

  /** Called after a batch got its stream IDs (committed) and before it is written to Redis. */
  default void beforeStreamWrite(ShardId shard, int rows) {}

  /** Called after a batch was written to Redis and before the database hears of it. */
  default void afterStreamWrite(ShardId shard, int rows) {}
}
