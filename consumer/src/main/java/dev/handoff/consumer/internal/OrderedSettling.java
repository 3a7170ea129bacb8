package dev.handoff.consumer.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * How a batch of a group ordered per shard is settled: nothing after a failed message commits before it, and every
 * commit is fenced by the shard's lease.
 *
 * @param fence checks the lease in the batch's transaction and records the shard's position
 * @param deadLetterExhausted whether a message out of deliveries is dead-lettered (else its shard stops)
 * @param skipStreamId the entry an operator asked to dead-letter now, or null
 * @param idleTimeout how long a batch's transaction may sit idle between statements before PostgreSQL ends it: the
 *     lease TTL, after which a frozen owner's transaction must not hold the next owner's markers any longer
 */
record OrderedSettling(Fence fence, boolean deadLetterExhausted, String skipStreamId, Duration idleTimeout) {

  /** The lease check of one shard, run last in each of its batch transactions. */
  @FunctionalInterface
  interface Fence {
    /** Records {@code position} under the lease; false if another consumer holds the shard now. */
    boolean holds(Connection c, String position) throws SQLException;
  }
}
