package dev.handoff.relay;

import dev.handoff.core.Health;
import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.ShardId;
import dev.handoff.core.Transport;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Hands committed outbox rows to Redis Streams, exactly once per row into the stream, in order per shard.
 *
 * <p>How it keeps that promise: each (topic, shard) stream has one writer at a time, chosen by a lease in the
 * {@code relay_lease} table on the database clock, with an epoch that grows at every takeover and fences every
 * write. Before anything goes to Redis, the writer assigns each row an explicit stream ID, strictly above every ID
 * assigned before and above the stream's own last ID, and commits it. Only then does it add the entries with those
 * IDs. Redis refuses an ID that is not above the stream's top, so re-sending a batch after a crash, a pause or a
 * takeover cannot add an entry twice; a refused ID whose entry is present counts as published, and one whose entry
 * is absent gets a fresh ID (an anomaly, reported). No Redis write runs inside a database transaction. A cycle's
 * transaction does wait on Redis reads: on lists, each list's free room (one script call, before it locks anything);
 * on streams, after an anomaly, the stream's top and oldest entry ({@code XINFO STREAM}) before the refused rows get
 * fresh IDs.
 *
 * <p>Guarantees: every committed row reaches its stream once (while Redis keeps its data; if Redis loses a stream,
 * the rows at or above the trim watermark are published again with their original IDs and consumers' inboxes absorb
 * the repeats); per shard, entries are in assignment order, which follows commit visibility; rows of rolled-back
 * transactions never exist. Streams are trimmed only below what every consumer group has finished, and published
 * rows are deleted after {@code outboxRetention}.
 *
 * <p>With {@link RelayBuilder#listTransport(int)} the relay writes one Redis list per shard instead, under the same
 * leases, fencing and pending batches: a Lua script RPUSHes the rows in order, skipping every row at or below the
 * last ID it pushed (kept beside the list, in the same hash slot), and stops at the capacity (list plus consumers'
 * processing lists); rows not pushed stay in the outbox. See {@link Transport#LIST} and {@link ListFormat}.
 *
 * <p>Several relays may run against one database: they split the shards between them and take over the shards of
 * a relay that stops renewing its leases. Instances are thread-safe.
 */
public interface Relay extends AutoCloseable {

  /**
   * Starts building a relay.
   *
   * @param dataSource connections to the database holding the outbox; the relay keeps one open for LISTEN (unless
   *     {@link RelayBuilder#notificationDataSource} gives another source) and borrows one at a time for its cycles;
   *     its lease renewals, metric refreshes and LISTEN checks each borrow their own on their own threads, so up to
   *     five may be out at once (four with a notification source of its own)
   * @param redis the Redis server or cluster, login, TLS and timeouts; the relay opens its own pool of up to 8
   *     connections (per node of a cluster) at {@link RelayBuilder#build()} and closes it when it closes
   */
  static RelayBuilder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new RelayBuilder(dataSource, redis);
  }

  /**
   * Starts the relay's thread, which runs until {@link #close()}: it takes its share of the shards, publishes as
   * rows are committed (polling while busy, woken by appends' {@code pg_notify} once it sleeps), trims streams and
   * purges old rows.
   *
   * @throws IllegalStateException if the relay was already started or closed
   */
  void start();

  /**
   * Runs one pass on the caller's thread: renews or takes leases, publishes everything committed so far, and
   * returns what it did. Meant for tests and tools that want determinism; do not mix with {@link #start()}.
   */
  RelayCycle relayOnce();

  /**
   * Runs one maintenance run now, on the caller's thread, whatever the schedule (finishing the run in progress, if
   * any): trims every owned stream below what all its consumer groups have finished, stores each shard's
   * watermark, and purges published rows past the outbox retention, all in bounded steps until caught up or the
   * retention budget is spent; then refreshes the relay's gauges when it has a {@code meterRegistry}, as its metrics
   * schedule does. Meant for tests and tools that must not depend on either schedule.
   *
   * @return what the run did, and whether it caught up
   * @throws IllegalStateException once the relay is closing or closed
   */
  RetentionReport maintainOnce();

  /** The report of the last maintenance run that ended, if any ran yet. */
  Optional<RetentionReport> lastRetention();

  /** The shards this relay holds a lease on right now. */
  Set<ShardId> ownedShards();

  /**
   * This relay's health, for a probe; cheap (no database or Redis call: it reads what the relay's threads record)
   * and thread-safe.
   *
   * <ul>
   *   <li>{@code DOWN}: {@code not-started} (never started: a relay driven by {@link #relayOnce()} is DOWN too),
   *       {@code closed} (closing or closed), or {@code relay-thread-dead} (its thread died of an {@link Error} or a
   *       bug; it is not replaced, since its leases expire for another relay to take; the death is logged at ERROR),
   *       or {@code shards-mismatch} (unpublished rows of its topics wait on a shard at or above its shard count that
   *       no live lease covers: an outbox declared more shards; the relay's thread looks every 30 s, and
   *       {@link #maintainOnce()} looks too).
   *   <li>{@code DEGRADED}: its last cycle failed and none went through since ({@code database-unreachable} for an
   *       SQL failure, a revoked grant included; {@code redis-unreachable}; {@code cycle-failing} for anything
   *       else); {@code relay-stuck} (no cycle completed for twice the lease TTL); {@code leases-lost} (another relay
   *       took a lease of this one within the last minute, or two lease TTLs if longer); {@code listener-dead}
   *       (the LISTEN thread died: the relay polls); {@code backlog-old} (see
   *       {@link RelayBuilder#backlogAgeThreshold}).
   *   <li>{@code UP} otherwise.
   * </ul>
   */
  Health health();

  /** The configuration this relay was built with. */
  RelayConfig config();

  /**
   * Stops taking work, publishes what was already assigned within the drain timeout, releases the leases (so that
   * another relay takes over at once instead of after the lease TTL), stops, and closes the relay's own Redis pool.
   * A relay that was built but never started holds that pool too: close it. Idempotent.
   */
  @Override
  default void close() {
    close(config().leases().drainTimeout());
  }

  /**
   * Like {@link #close()} with an explicit drain deadline.
   *
   * @return true if everything assigned was published before the deadline
   */
  boolean close(Duration drainTimeout);
}
