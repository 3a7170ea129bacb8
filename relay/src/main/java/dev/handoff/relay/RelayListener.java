package dev.handoff.relay;

import dev.handoff.core.ShardId;

/**
 * Callbacks from a {@link Relay}, for metrics and alerts. Every method has a no-op default, so an implementation
 * overrides what it needs.
 *
 * <p>Callbacks run on the relay's own thread, synchronously: keep them fast and never throw (an exception is logged
 * and ignored). They are not called for work lost with the JVM (a crash between an XADD and the callback), so
 * counts derived from them are lower bounds; the database and the streams are the truth.
 */
public interface RelayListener {

  /** A listener that does nothing. */
  RelayListener NOOP = new RelayListener() {};

  /** This relay became the writer of {@code shard}, with fencing epoch {@code epoch}. */
  default void leaseAcquired(ShardId shard, long epoch) {}

  /** This relay stopped writing {@code shard}: released on purpose, or found taken by another relay. */
  default void leaseLost(ShardId shard, long epoch, boolean released) {}

  /** Rows were confirmed in the stream and marked published. */
  default void published(ShardId shard, int rows, long oldestCreatedAtMillis) {}

  /**
   * Rows were sent again (after a crash, a pause or a takeover) and Redis already held them under their IDs: they
   * count as published and nothing was added twice.
   */
  default void alreadyPresent(ShardId shard, int rows) {}

  /**
   * Redis refused a stream ID and the entry was not there: something else wrote the stream. The rows get fresh
   * IDs and are published again; this should never happen in a correct deployment.
   */
  default void anomaly(ShardId shard, int rows, String detail) {}

  /**
   * The stream of {@code shard} holds {@code entries} entries that the relays added and the database does not record:
   * the database went back in time (a failover to a standby that lacked the last commits). {@code detail} is the
   * line the relay logged at ERROR; the relay's health says {@code database-rewound} until it restarts.
   */
  default void databaseRewound(ShardId shard, long entries, String detail) {}

  /**
   * Redis lost the stream (restart without persistence, eviction, deletion) or its last entries (a replica promoted
   * after its master failed lacked the last writes). {@code republished} rows are being published again with their
   * original IDs: every retained row at or above the trim watermark after a whole loss; after a partial one, those
   * from the last entry the stream still holds (that one is found there, the rest were missing).
   */
  default void streamLost(ShardId shard, long republished) {}

  /**
   * Entries that a consumer group still needed were found gone from the stream (deleted with XDEL, trimmed by hand)
   * by the relay's maintenance: {@code repair} says which rows were made unpublished again (the relay publishes them
   * again at the end of the stream with new IDs), which pending entries were acknowledged and which could not be
   * recovered (their rows were purged). See {@link StreamRepair}.
   */
  default void entriesDeleted(ShardId shard, RepairReport.ShardRepair repair) {}

  /** The stream was trimmed below {@code minId}, which every consumer group had finished. */
  default void trimmed(ShardId shard, String minId, long evicted) {}

  /** Published rows older than the retention window were deleted. */
  default void purged(long rows) {}

  /** A maintenance run ended: what it trimmed and purged, and whether it caught up (see {@link RetentionReport}). */
  default void maintained(RetentionReport report) {}

  /** A relay cycle failed; the relay retries after a pause. */
  default void failed(Throwable error) {}
}
