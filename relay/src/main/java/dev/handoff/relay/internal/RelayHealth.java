package dev.handoff.relay.internal;

import dev.handoff.core.Health;
import dev.handoff.core.ShardId;
import dev.handoff.relay.RelayConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import redis.clients.jedis.exceptions.JedisException;

/**
 * What {@code Relay.health()} reports, from what the relay's threads record as they go: the last cycle's failure
 * (cleared by the next cycle that goes through), the last lease lost, and the age of the oldest unpublished row
 * (looked at by the relay's own thread when a threshold is set); plus the liveness of the threads, given at the
 * time of asking. No database or Redis call is made by {@link #report}.
 *
 * <p>Thread-safe: what the relay's thread records is volatile; {@link #checkBacklogIfDue} runs on that thread only.
 */
final class RelayHealth {

  private static final Duration LEASE_LOST_WINDOW = Duration.ofMinutes(1);

  private final RelayConfig config;
  private final Clock clock;
  private final String oldestUnpublished;
  private final String[] topics;
  private final Integer[] shards;
  private final long backlogEveryNanos;
  private final long leaseLostWindowNanos;
  private long nextBacklogCheckNanos;
  private volatile Throwable failure;
  private volatile Instant failingSince;
  private volatile long failuresInRow;
  private volatile String backlogTooOld;
  private volatile String lastLeaseLost;
  private volatile long lastLeaseLostNanos;
  private final RedisMemory memory = new RedisMemory();
  private final StrandedShards stranded;
  private final DatabaseRewinds rewinds;

  RelayHealth(RelayConfig config, RelayCollaborators collaborators) {
    this.config = config;
    this.clock = collaborators.clock();
    List<ShardId> all = config.shards();
    this.topics = all.stream().map(ShardId::topic).toArray(String[]::new);
    this.shards = all.stream().map(ShardId::shard).toArray(Integer[]::new);
    // One index probe per shard (outbox_unpublished_idx): the oldest unpublished row by id, its age by the
    // database clock.
    this.oldestUnpublished = "SELECT s.topic, s.shard, (extract(epoch FROM clock_timestamp() - o.created_at)"
        + " * 1000)::bigint AS age_ms FROM unnest(?::text[], ?::int[]) AS s(topic, shard) CROSS JOIN LATERAL"
        + " (SELECT created_at FROM " + config.schema() + ".outbox WHERE topic = s.topic AND shard = s.shard"
        + " AND published_at IS NULL ORDER BY id LIMIT 1) o ORDER BY age_ms DESC LIMIT 1";
    long half = config.checks().backlogAgeThreshold().toNanos() / 2;
    this.backlogEveryNanos =
        Math.max(Duration.ofMillis(100).toNanos(), Math.min(half, Duration.ofSeconds(10).toNanos()));
    // Long enough for a probe to see it, however often it asks.
    this.leaseLostWindowNanos = Math.max(config.leases().ttl().toNanos() * 2, LEASE_LOST_WINDOW.toNanos());
    this.stranded = new StrandedShards(config);
    this.rewinds = new DatabaseRewinds(config, collaborators);
  }

  DatabaseRewinds rewinds() {
    return rewinds;
  }

  /** The look for rows on shards no relay owns, which the relay's thread and {@code maintainOnce()} run. */
  StrandedShards stranded() {
    return stranded;
  }

  /** What the relay saw of Redis being full, which the publish cycle records. */
  RedisMemory memory() {
    return memory;
  }

  void cycleSucceeded() {
    memory.cleared();
    if (failure != null) {
      failure = null;
      failingSince = null;
      failuresInRow = 0;
    }
  }

  void cycleFailed(Throwable e) {
    if (failure == null) {
      failingSince = Instant.now(clock);
    }
    failuresInRow++;
    failure = e;
  }

  void leaseLost(ShardId shard, long epoch, String why) {
    lastLeaseLost = shard + " (epoch " + epoch + "): " + why;
    lastLeaseLostNanos = System.nanoTime();
  }

  /** On the relay's thread, inside its cycle: looks at the oldest unpublished row when a look is due. */
  void checkBacklogIfDue(ConnectionSource connections) throws SQLException {
    if (config.checks().backlogAgeThreshold().isZero() || System.nanoTime() - nextBacklogCheckNanos < 0) {
      return;
    }
    nextBacklogCheckNanos = System.nanoTime() + backlogEveryNanos;
    try (Connection c = connections.get(); PreparedStatement ps = c.prepareStatement(oldestUnpublished)) {
      ps.setArray(1, c.createArrayOf("text", topics));
      ps.setArray(2, c.createArrayOf("integer", shards));
      try (ResultSet rs = ps.executeQuery()) {
        String tooOld = null;
        if (rs.next() && rs.getLong(3) > config.checks().backlogAgeThreshold().toMillis()) {
          tooOld = "the oldest unpublished row of " + new ShardId(rs.getString(1), rs.getInt(2)) + " is "
              + rs.getLong(3) + " ms old, past the threshold of " + config.checks().backlogAgeThreshold();
        }
        backlogTooOld = tooOld;
      }
    }
  }

  /**
   * The relay's health now.
   *
   * @param downCode {@code not-started} or {@code closed} when the relay is not running, else null
   * @param loop the relay's thread, null before start
   * @param listen the LISTEN thread, null before start
   * @param renewerSilentNanos how long the relay's thread has not checked in with the lease renewer
   */
  Health report(String downCode, Thread loop, Thread listen, long renewerSilentNanos) {
    String relay = "relay " + config.owner();
    if (downCode != null || loop == null) {
      return Health.down(downCode != null ? downCode : "not-started",
          relay + (downCode == null || downCode.equals("not-started") ? " was not started" : " is closed"));
    }
    if (!loop.isAlive()) {
      return Health.down("relay-thread-dead", relay + ": its thread " + loop.getName() + " died; it publishes"
          + " nothing more and its leases expire for another relay to take (see the ERROR line in its log)");
    }
    String strandedRows = stranded.finding();
    if (strandedRows != null) {
      return Health.down("shards-mismatch", relay + ": " + strandedRows);
    }
    List<Health.Reason> reasons = new ArrayList<>();
    Throwable f = failure;
    RedisMemory.Full full = memory.current();
    if (f != null && full != null && RedisMemory.isOutOfMemory(f)) {
      reasons.add(new Health.Reason("redis-full", relay + ": Redis is full (maxmemory with noeviction) and refuses"
          + " new entries: " + full.describe() + "; " + failuresInRow + " cycle(s) in a row refused since "
          + full.since() + ". It publishes again as soon as the consumer groups finish entries and the relay trims"
          + " them; if no group makes progress, start consumers or raise maxmemory"));
    } else if (f != null) {
      reasons.add(new Health.Reason(failureCode(f), relay + ": " + failuresInRow + " cycle(s) in a row failed since "
          + failingSince + ", the last with " + oneLine(f)));
    }
    if (renewerSilentNanos > config.leases().ttl().toNanos() * 2) {
      reasons.add(new Health.Reason("relay-stuck", relay + ": its thread has not completed a cycle for "
          + Duration.ofNanos(renewerSilentNanos).toMillis() + " ms; its leases are no longer renewed"));
    }
    String lost = lastLeaseLost;
    if (lost != null && System.nanoTime() - lastLeaseLostNanos < leaseLostWindowNanos) {
      reasons.add(new Health.Reason("leases-lost", relay + " lost its lease of " + lost + " (within the last "
          + Duration.ofNanos(leaseLostWindowNanos) + ")"));
    }
    if (listen != null && !listen.isAlive()) {
      reasons.add(new Health.Reason("listener-dead", relay + ": its LISTEN thread " + listen.getName()
          + " died; it polls the outbox every " + config.publishing().idlePollInterval()));
    }
    String backlog = backlogTooOld;
    if (backlog != null) {
      reasons.add(new Health.Reason("backlog-old", relay + ": " + backlog));
    }
    String rewound = rewinds.finding();
    SortedSet<ShardId> paused = rewinds.paused();
    if (rewound != null || !paused.isEmpty()) {
      String pausedText = paused.isEmpty() ? "" : " Publishing of " + paused + " is paused (pauseOnDatabaseRewind)"
          + " until an operator runs handoff resume --topic for " + (paused.size() == 1 ? "it" : "them") + ".";
      reasons.add(new Health.Reason("database-rewound", relay + ": "
          + (rewound != null ? rewound : "the database went back in time before this relay took its shards.")
          + pausedText));
    }
    return Health.of(reasons);
  }

  /** The episode of Redis being full that the last failed cycle is part of, or null. */
  RedisMemory.Full fullEpisode() {
    Throwable f = failure;
    return f != null && RedisMemory.isOutOfMemory(f) ? memory.current() : null;
  }

  private static String failureCode(Throwable f) {
    if (RedisMemory.isOutOfMemory(f)) {
      return "redis-full";
    }
    for (Throwable t = f; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof JedisException) {
        return "redis-unreachable";
      }
      if (t instanceof SQLException) {
        return "database-unreachable";
      }
    }
    return "cycle-failing";
  }

  private static String oneLine(Throwable e) {
    return e.toString().replaceAll("\\s*\\R\\s*", " ").strip();
  }
}
