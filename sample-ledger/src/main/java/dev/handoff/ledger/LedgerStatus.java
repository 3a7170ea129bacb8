package dev.handoff.ledger;

import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.relay.RelayBuilder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.resps.StreamGroupInfo;

/**
 * The numbers of design section 6 for the payments topic, gathered from PostgreSQL and Redis: per shard the outbox
 * depth and oldest unpublished age, the relay lease, the stream's length and first/last entries; per consumer group
 * the backlog (never delivered), pending (delivered, not acknowledged) and its oldest age, consumers, the
 * delivery-count histogram, dead letters and duplicates skipped. Backlog and pending answer different questions
 * ({@code XPENDING} can be 0 while thousands of entries were never delivered), so they are never added together.
 *
 * <p>On the list transport: per shard waiting ({@code LLEN}), in processing per consumer (alive or not), the oldest
 * element in processing and its age, the relay's capacity and the outbox backlog (the two bounds: the capacity
 * covers waiting plus in processing, the outbox holds the rest), and the group's dead letters. Which transport is
 * shown: the one asked for, or (auto) whichever has keys in Redis, both when both have.
 */
public final class LedgerStatus {

  private LedgerStatus() {}

  /** One shard's producer and relay side. */
  public record Shard(int shard, String streamKey, long outboxDepth, Duration oldestUnpublished, String leaseOwner,
      long leaseEpoch, boolean leaseLive, boolean streamExists, long streamLength, String firstEntryId,
      String lastEntryId) {}

  /** One consumer group: handoff's status plus the counters the ledger's consumers record. */
  public record Group(String name, ConsumerStatus status, long deliveries, long duplicatesSkipped, long reclaimed,
      boolean countersRecorded) {}

  /**
   * The list transport's side: handoff's list status for one group plus the counters its ledger consumers record.
   */
  public record Lists(ListStatus status, long deliveries, long duplicatesSkipped, long reclaimed,
      boolean countersRecorded) {}

  /**
   * Everything {@code status} shows.
   *
   * @param streams whether the stream side (stream columns, groups) is shown
   * @param lists the list side, or {@code null} when it is not shown
   */
  public record Snapshot(String schema, String keyPrefix, Instant at, List<Shard> shards, List<Group> groups,
      boolean streams, Lists lists, RetentionStatus retention) {}

  /** Reads the status of the payments topic on the streams. */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix) {
    return collect(dataSource, redis, redisServer, redisConfig, schema, keyPrefix, Transport.STREAM,
        LedgerConsumer.DEFAULT_GROUP);
  }

  /** Whether Redis holds any of the list transport's keys for the payments topic under {@code keyPrefix}. */
  public static boolean listKeysExist(UnifiedJedis redis, String keyPrefix) {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(keyPrefix, PaymentEvents.TOPIC, shard);
      if (redis.exists(list) || redis.exists(ListFormat.relayKey(list)) || redis.exists(ListFormat.consumersKey(list))) {
        return true;
      }
    }
    return false;
  }

  /** Whether Redis holds any stream of the payments topic under {@code keyPrefix}. */
  public static boolean streamsExist(UnifiedJedis redis, String keyPrefix) {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      if (redis.exists(StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Reads the status of the payments topic.
   *
   * @param transport the transport to show, or {@code null} for whichever has keys in Redis (both when both have,
   *     streams when neither has)
   * @param listGroup the consumer group whose list status (dead letters, counters) is shown
   */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix, Transport transport, String listGroup) {
    return collect(dataSource, redis, redisServer, redisConfig, schema, keyPrefix, transport, listGroup,
        RelayBuilder.DEFAULT_OUTBOX_RETENTION);
  }

  /** As above, with the purge lag measured against the relays' {@code outboxRetention}. */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix, Transport transport, String listGroup,
      Duration outboxRetention) {
    return collect(new LedgerServers(dataSource, redis, redisServer, redisConfig), schema, keyPrefix, transport,
        listGroup, outboxRetention);
  }

  /** As above, on {@code servers} (a single Redis server or a cluster). */
  public static Snapshot collect(LedgerServers servers, String schema, String keyPrefix, Transport transport,
      String listGroup, Duration outboxRetention) {
    String s = SchemaNames.requireValid(schema);
    DataSource dataSource = servers.dataSource();
    UnifiedJedis redis = servers.redis();
    boolean showLists = transport == Transport.LIST || transport == null && listKeysExist(redis, keyPrefix);
    boolean showStreams = transport == Transport.STREAM
        || transport == null && (!showLists || streamsExist(redis, keyPrefix));
    Instant now = Instant.now();
    try (Connection c = dataSource.getConnection()) {
      Map<Integer, Object[]> depth = perShard(c, "SELECT shard, count(*), min(created_at) FROM " + s
          + ".outbox WHERE topic = ? AND published_at IS NULL GROUP BY shard",
          rs -> new Object[] {rs.getLong(2), rs.getTimestamp(3)});
      Map<Integer, Object[]> leases = perShard(c, "SELECT shard, owner, epoch, expires_at > clock_timestamp()"
          + " FROM " + s + ".relay_lease WHERE topic = ?",
          rs -> new Object[] {rs.getString(2), rs.getLong(3), rs.getBoolean(4)});
      List<Shard> shards = new ArrayList<>();
      TreeSet<String> groupNames = new TreeSet<>();
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String key = StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard);
        shards.add(shard(redis, shard, key, depth.getOrDefault(shard, new Object[] {0L, null}),
            leases.getOrDefault(shard, new Object[] {null, 0L, false}), now));
        if (showStreams && shards.get(shard).streamExists()) {
          for (StreamGroupInfo g : redis.xinfoGroups(key)) {
            groupNames.add(g.getName());
          }
        }
      }
      List<Group> groups = new ArrayList<>();
      for (String name : groupNames) {
        ConsumerStatus status;
        try (StreamConsumer probe = servers.streamProbe(schema, keyPrefix, PaymentEvents.TOPIC_CONFIG, name)
            .build()) {
          status = probe.status();
        }
        long[] counters = counters(c, s, name);
        groups.add(new Group(name, status, counters[0], counters[1], counters[2], counters != NO_COUNTERS));
      }
      Lists lists = null;
      if (showLists) {
        ListStatus status;
        try (ListConsumer probe = servers.listProbe(schema, keyPrefix, PaymentEvents.TOPIC_CONFIG, listGroup)
            .build()) {
          status = probe.status(); // never started: no heartbeat, no registration, nothing taken
        }
        long[] counters = counters(c, s, listGroup);
        lists = new Lists(status, counters[0], counters[1], counters[2], counters != NO_COUNTERS);
      }
      RetentionStatus retention = RetentionStatus.read(c, s, redis, keyPrefix, PaymentEvents.SHARDS,
          outboxRetention, showStreams);
      return new Snapshot(schema, keyPrefix, now, shards, groups, showStreams, lists, retention);
    } catch (SQLException e) {
      throw new LedgerException("could not read the status: " + e.getMessage(), e);
    }
  }

  private interface Row {
    Object[] read(ResultSet rs) throws SQLException;
  }

  /** The rows of {@code sql} (the topic bound to its one parameter) by the shard in their first column. */
  private static Map<Integer, Object[]> perShard(Connection c, String sql, Row row) throws SQLException {
    Map<Integer, Object[]> byShard = new LinkedHashMap<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, PaymentEvents.TOPIC);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          byShard.put(rs.getInt(1), row.read(rs));
        }
      }
    }
    return byShard;
  }

  /** One shard: its outbox depth and relay lease as read, its stream's length and ends from Redis. */
  private static Shard shard(UnifiedJedis redis, int shard, String key, Object[] depth, Object[] lease, Instant now) {
    Timestamp oldest = (Timestamp) depth[1];
    boolean exists = redis.exists(key);
    long length = exists ? redis.xlen(key) : 0;
    String first = null;
    String last = null;
    if (length > 0) {
      List<StreamEntry> f = redis.xrange(key, "-", "+", 1);
      List<StreamEntry> z = redis.xrevrange(key, "+", "-", 1);
      first = f.isEmpty() ? null : f.get(0).getID().toString();
      last = z.isEmpty() ? null : z.get(0).getID().toString();
    }
    return new Shard(shard, key, (Long) depth[0],
        oldest == null ? null : Duration.between(oldest.toInstant(), now).abs(), (String) lease[0], (Long) lease[1],
        (Boolean) lease[2], exists, length, first, last);
  }

  private static final long[] NO_COUNTERS = {0, 0, 0};

  /** The group's deliveries, duplicates skipped and reclaimed as its ledger consumers recorded them. */
  private static long[] counters(Connection c, String schema, String group) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT deliveries, duplicates_skipped, reclaimed FROM " + schema
        + ".consumer_stats WHERE consumer_group = ?")) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)} : NO_COUNTERS;
      }
    }
  }

  /** The snapshot as a JSON-ready map. */
  public static Map<String, Object> toMap(Snapshot snap) {
    return StatusJson.toMap(snap);
  }

  /** The snapshot for people: one table for the producer side, one per group. */
  public static List<String> lines(Snapshot snap) {
    return StatusText.lines(snap);
  }

  /** Milliseconds from the time a stream entry ID encodes until {@code now}, or {@code null} without an ID. */
  static Long ageMillis(String id, Instant now) {
    if (id == null) {
      return null;
    }
    return Math.max(0, now.toEpochMilli() - Long.parseLong(id.substring(0, id.indexOf('-'))));
  }
}
