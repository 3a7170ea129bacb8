package dev.handoff.relay.internal.micrometer;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.MetricsRefresher;
import dev.handoff.core.internal.Statements;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.RepairReport;
import dev.handoff.relay.RetentionReport;
import dev.handoff.relay.internal.DefaultRelay;
import dev.handoff.relay.internal.RelayCollaborators;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * A relay's meters: the counters and the latency timer fed by its {@link RelayListener} callbacks (the user's
 * listener is called first), and the gauges of every configured shard (outbox depth, oldest unpublished age, stream
 * length) refreshed by a {@link MetricsRefresher}, never by a scrape. Names and tags are documented in
 * docs/operations.md.
 */
public final class RelayMetrics implements RelayListener {

  /**
   * The most unpublished rows one shard's depth query counts: past it the gauge is a lower bound. The consumers'
   * default status scan limit, for the same reason: a refresh must cost the same on a huge backlog.
   */
  public static final int DEPTH_SCAN_LIMIT = 10_000;

  private final MeterRegistry registry;
  private final RelayListener delegate;
  private final Map<ShardId, ShardMeters> shards = new ConcurrentHashMap<>();
  private final Map<ShardId, ShardGauges> gauges = new LinkedHashMap<>();
  private final Counter failures;
  private final Counter purged;

  private RelayMetrics(MeterRegistry registry, RelayListener delegate) {
    this.registry = registry;
    this.delegate = delegate;
    this.failures = Counter.builder("handoff.relay.failures")
        .description("relay cycles that failed (database or Redis); the relay pauses and retries")
        .register(registry);
    this.purged = Counter.builder("handoff.relay.purged")
        .description("published outbox rows deleted past the retention").register(registry);
  }

  /** Builds the relay with its listener wrapped and its gauges registered and refreshed every {@code interval}. */
  public static Relay build(MeterRegistry registry, Duration interval, RelayConfig config,
      RelayCollaborators collaborators, DataSource dataSource, UnifiedJedis redis,
      Function<RelayCollaborators, DefaultRelay> create) {
    RelayMetrics metrics = new RelayMetrics(registry, collaborators.listener());
    DefaultRelay relay = create.apply(collaborators.withListener(metrics));
    Gauge.builder("handoff.relay.leases.owned", relay, r -> r.ownedShards().size())
        .description("shards this relay holds a lease on").register(registry);
    Gauge.builder("handoff.relay.redis.full", relay, r -> r.health().has("redis-full") ? 1 : 0)
        .description("1 while Redis refuses the relay's writes because it is full (maxmemory, noeviction)")
        .register(registry);
    for (TopicConfig t : config.topics()) {
      for (int s = 0; s < t.shards(); s++) {
        ShardId id = new ShardId(t.name(), s);
        metrics.gauges.put(id, new ShardGauges(registry, id, config));
        metrics.meters(id); // registered at 0 from the start, so that a rate or an alert has a series to read
      }
    }
    DataSource db = Statements.sessionFree(dataSource); // unnamed statements, as the relay's own (PgBouncer)
    Runnable refresh = () -> metrics.refresh(config, db, redis);
    relay.attachMetrics(new MetricsRefresher("relay-" + config.owner(), interval, refresh));
    return relay;
  }

  // ---- the gauges that need a query: refreshed on the schedule ------------------------------------------------

  private void refresh(RelayConfig config, DataSource dataSource, UnifiedJedis redis) {
    String sql = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + config.schema() + ".outbox"
        + " WHERE topic = ? AND shard = ? AND published_at IS NULL LIMIT ?) r),"
        + " (SELECT (extract(epoch FROM clock_timestamp() - o.created_at) * 1000)::bigint FROM (SELECT created_at FROM "
        + config.schema() + ".outbox WHERE topic = ? AND shard = ? AND published_at IS NULL ORDER BY id LIMIT 1) o)";
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      try (PreparedStatement ps = Statements.prepare(c, sql)) {
        for (Map.Entry<ShardId, ShardGauges> e : gauges.entrySet()) {
          ShardId id = e.getKey();
          ps.setString(1, id.topic());
          ps.setInt(2, id.shard());
          ps.setInt(3, DEPTH_SCAN_LIMIT);
          ps.setString(4, id.topic());
          ps.setInt(5, id.shard());
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            e.getValue().depth.set(rs.getLong(1));
            e.getValue().oldestAgeMillis.set(Math.max(0, rs.getLong(2))); // null (nothing unpublished) reads 0
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("outbox depth query failed: " + e.getMessage(), e);
    }
    for (Map.Entry<ShardId, ShardGauges> e : gauges.entrySet()) {
      ShardId id = e.getKey();
      long length = config.transport() == Transport.LIST
          ? redis.llen(ListFormat.listKey(config.keyPrefix(), id.topic(), id.shard()))
          : redis.xlen(StreamFormat.streamKey(config.keyPrefix(), id.topic(), id.shard()));
      e.getValue().length.set(length);
    }
  }

  private static final class ShardGauges {
    final AtomicLong depth = new AtomicLong();
    final AtomicLong oldestAgeMillis = new AtomicLong();
    final AtomicLong length = new AtomicLong();

    ShardGauges(MeterRegistry registry, ShardId id, RelayConfig config) {
      Tags tags = tags(id);
      Gauge.builder("handoff.outbox.depth", depth, AtomicLong::doubleValue).tags(tags)
          .description("unpublished outbox rows of the shard (a lower bound past " + DEPTH_SCAN_LIMIT + ")")
          .register(registry);
      TimeGauge.builder("handoff.outbox.oldest.age", oldestAgeMillis, TimeUnit.MILLISECONDS,
              AtomicLong::doubleValue).tags(tags)
          .description("age of the shard's oldest unpublished outbox row (0 when none), on the database clock")
          .register(registry);
      String name = config.transport() == Transport.LIST ? "handoff.list.length" : "handoff.stream.length";
      Gauge.builder(name, length, AtomicLong::doubleValue).tags(tags)
          .description("entries the shard's Redis stream (or list) holds, whatever their state").register(registry);
    }
  }

  // ---- the listener: counters and the timer, on the relay's thread ---------------------------------------------

  private static Tags tags(ShardId id) {
    return Tags.of("topic", id.topic(), "shard", Integer.toString(id.shard()));
  }

  private ShardMeters meters(ShardId id) {
    return shards.computeIfAbsent(id, i -> new ShardMeters(registry, tags(i)));
  }

  private static final class ShardMeters {
    final Counter published;
    final Timer latency;
    final Counter leaseLosses;
    final Counter alreadyPresent;
    final Counter anomalies;
    final Counter streamLost;
    final Counter entriesDeleted;
    final Counter rewoundEntries;

    ShardMeters(MeterRegistry registry, Tags tags) {
      published = Counter.builder("handoff.relay.published").tags(tags)
          .description("outbox rows confirmed in Redis and marked published").register(registry);
      latency = Timer.builder("handoff.relay.latency").tags(tags)
          .description("commit-to-stream latency: age of each published batch's oldest row when it was confirmed")
          .register(registry);
      leaseLosses = Counter.builder("handoff.relay.lease.losses").tags(tags)
          .description("leases this relay lost to another relay (not released on purpose)").register(registry);
      alreadyPresent = repairs(registry, tags, "already_present");
      anomalies = repairs(registry, tags, "anomaly");
      streamLost = repairs(registry, tags, "stream_lost");
      entriesDeleted = repairs(registry, tags, "entries_deleted");
      rewoundEntries = Counter.builder("handoff.relay.database.rewound").tags(tags)
          .description("entries found in the stream that the relays added and the database no longer records: the"
              + " database went back in time (a failover to a standby that lacked the last commits)")
          .register(registry);
    }

    private static Counter repairs(MeterRegistry registry, Tags tags, String kind) {
      return Counter.builder("handoff.relay.repairs").tags(tags).tag("kind", kind)
          .description("rows the relay repaired: sent again and found present, re-IDed after an anomaly,"
              + " republished after Redis lost the stream, or reset after their entries were deleted")
          .register(registry);
    }
  }

  @Override
  public void leaseAcquired(ShardId shard, long epoch) {
    delegate.leaseAcquired(shard, epoch);
  }

  @Override
  public void leaseLost(ShardId shard, long epoch, boolean released) {
    if (!released) {
      meters(shard).leaseLosses.increment();
    }
    delegate.leaseLost(shard, epoch, released);
  }

  @Override
  public void published(ShardId shard, int rows, long oldestCreatedAtMillis) {
    ShardMeters m = meters(shard);
    m.published.increment(rows);
    m.latency.record(Math.max(0, System.currentTimeMillis() - oldestCreatedAtMillis), TimeUnit.MILLISECONDS);
    delegate.published(shard, rows, oldestCreatedAtMillis);
  }

  @Override
  public void alreadyPresent(ShardId shard, int rows) {
    meters(shard).alreadyPresent.increment(rows);
    delegate.alreadyPresent(shard, rows);
  }

  @Override
  public void anomaly(ShardId shard, int rows, String detail) {
    meters(shard).anomalies.increment(rows);
    delegate.anomaly(shard, rows, detail);
  }

  @Override
  public void databaseRewound(ShardId shard, long entries, String detail) {
    meters(shard).rewoundEntries.increment(entries);
    delegate.databaseRewound(shard, entries, detail);
  }

  @Override
  public void streamLost(ShardId shard, long republished) {
    meters(shard).streamLost.increment(republished);
    delegate.streamLost(shard, republished);
  }

  @Override
  public void entriesDeleted(ShardId shard, RepairReport.ShardRepair repair) {
    meters(shard).entriesDeleted.increment(repair.rowsReset().size());
    delegate.entriesDeleted(shard, repair);
  }

  @Override
  public void trimmed(ShardId shard, String minId, long evicted) {
    delegate.trimmed(shard, minId, evicted);
  }

  @Override
  public void purged(long rows) {
    purged.increment(rows);
    delegate.purged(rows);
  }

  @Override
  public void maintained(RetentionReport report) {
    delegate.maintained(report);
  }

  @Override
  public void failed(Throwable error) {
    failures.increment();
    delegate.failed(error);
  }
}
