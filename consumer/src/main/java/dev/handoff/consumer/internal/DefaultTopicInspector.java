package dev.handoff.consumer.internal;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicStatus;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Reads a topic's status. The per-group figures come from a consumer built for the group and never started (it
 * neither joins the group nor registers), so they are computed by exactly the code a group's own consumers use.
 */
public final class DefaultTopicInspector implements TopicInspector {

  /** The list figures do not depend on the group; without a known group they are read under this name. */
  private static final String ANY_LIST_GROUP = "handoff-status";
  private static final BatchMessageHandler NEVER = (tx, messages) -> {
    throw new IllegalStateException("a status probe never handles messages");
  };

  private final DataSource dataSource;
  private final RedisConnectionSpec redisSpec;
  private final String schema;
  private final String keyPrefix;
  private final int statusScanLimit;
  private final UnifiedJedis redis;

  public DefaultTopicInspector(DataSource dataSource, RedisConnectionSpec redis, String schema, String keyPrefix,
      int statusScanLimit) {
    this.dataSource = dataSource;
    this.redisSpec = redis;
    this.schema = schema;
    this.keyPrefix = keyPrefix;
    this.statusScanLimit = statusScanLimit;
    this.redis = RedisConnections.commands(redis.hostAndPort(), redis.clusterNodes(), redis.clientConfig(), 2,
        ConsumerBuilder.DEFAULT_REDIS_POOL_WAIT);
  }

  @Override
  public List<String> topics() {
    try (Connection c = dataSource.getConnection()) {
      return List.copyOf(TopicDiscovery.discover(c, schema, redis, keyPrefix, null).shards().keySet());
    } catch (SQLException e) {
      throw new ConsumerException("could not list the topics of schema '" + schema + "'", e);
    }
  }

  @Override
  public TopicStatus status(String topic) {
    return status(topic, null);
  }

  @Override
  public TopicStatus status(String topic, String group) {
    requireTopicName(topic);
    Instant now = Instant.now();
    try (Connection c = dataSource.getConnection()) {
      TopicDiscovery.Found found = TopicDiscovery.discover(c, schema, redis, keyPrefix, topic);
      Map<Integer, Object[]> depth = perShard(c, "SELECT shard, count(*), min(created_at) FROM " + schema
          + ".outbox WHERE topic = ? AND published_at IS NULL GROUP BY shard", topic,
          rs -> new Object[] {rs.getLong(2), rs.getTimestamp(3)});
      Map<Integer, Object[]> leases = perShard(c, "SELECT shard, owner, epoch, expires_at,"
          + " expires_at > clock_timestamp(), paused_at FROM " + schema + ".relay_lease WHERE topic = ?", topic,
          rs -> new Object[] {rs.getString(2), rs.getLong(3), rs.getTimestamp(4), rs.getBoolean(5),
              rs.getTimestamp(6)});
      SortedSet<Integer> known = new TreeSet<>(found.shards().getOrDefault(topic, new TreeSet<>()));
      known.addAll(depth.keySet());
      int shardCount = known.isEmpty() ? 0 : known.last() + 1;
      List<TopicStatus.ShardStatus> shards = new ArrayList<>();
      SortedSet<String> streamGroupNames = new TreeSet<>();
      for (int shard = 0; shard < shardCount; shard++) {
        TopicStatus.ShardStatus s = shard(topic, shard, depth.get(shard), leases.get(shard), now);
        shards.add(s);
        if (s.stream().exists()) {
          for (StreamGroupInfo g : redis.xinfoGroups(s.stream().key())) {
            streamGroupNames.add(g.getName());
          }
        }
      }
      Set<Transport> transports = found.transports().getOrDefault(topic, Set.of());
      List<ConsumerStatus> streamGroups = new ArrayList<>();
      for (String name : streamGroupNames) {
        if (group == null || group.equals(name)) {
          streamGroups.add(streamGroup(topic, shardCount, name));
        }
      }
      List<ListStatus> listGroups = new ArrayList<>();
      if (transports.contains(Transport.LIST)) {
        List<String> names = group != null ? List.of(group) : deadLetterGroups(c, topic);
        for (String name : names) {
          listGroups.add(listGroup(topic, shardCount, name));
        }
        if (names.isEmpty()) {
          ListStatus any = listGroup(topic, shardCount, ANY_LIST_GROUP);
          listGroups.add(new ListStatus("*", topic, any.shards(), 0, 0, List.of()));
        }
      }
      return new TopicStatus(topic, now, transports, shards, streamGroups, listGroups);
    } catch (SQLException e) {
      throw new ConsumerException("could not read the status of topic '" + topic + "' in schema '" + schema + "'", e);
    }
  }

  @Override
  public FailoverReport failoverReport(String topic, int listLimit) {
    requireTopicName(topic);
    if (listLimit < 0) {
      throw new IllegalArgumentException("listLimit must not be negative, was " + listLimit);
    }
    try (Connection c = dataSource.getConnection()) {
      TopicDiscovery.Found found = TopicDiscovery.discover(c, schema, redis, keyPrefix, topic);
      return new FailoverFindings(redis, schema, keyPrefix, listLimit)
          .report(c, topic, found.shards().getOrDefault(topic, new TreeSet<>()));
    } catch (SQLException e) {
      throw new ConsumerException("could not read the outbox of topic '" + topic + "' in schema '" + schema + "'", e);
    }
  }

  private static void requireTopicName(String topic) {
    if (topic == null || !TopicConfig.NAME_PATTERN.matcher(topic).matches()) {
      throw new IllegalArgumentException("topic must match " + TopicConfig.NAME_PATTERN.pattern() + ", was "
          + (topic == null ? "null" : "'" + topic + "'"));
    }
  }

  private TopicStatus.ShardStatus shard(String topic, int shard, Object[] depth, Object[] lease, Instant now) {
    String key = StreamFormat.streamKey(keyPrefix, topic, shard);
    boolean exists = redis.exists(key) && "stream".equals(redis.type(key));
    long length = exists ? redis.xlen(key) : 0;
    String first = null;
    String last = null;
    if (length > 0) {
      List<StreamEntry> f = redis.xrange(key, "-", "+", 1);
      List<StreamEntry> z = redis.xrevrange(key, "+", "-", 1);
      first = f.isEmpty() ? null : f.get(0).getID().toString();
      last = z.isEmpty() ? null : z.get(0).getID().toString();
    }
    Timestamp oldest = depth == null ? null : (Timestamp) depth[1];
    Timestamp expires = lease == null ? null : (Timestamp) lease[2];
    return new TopicStatus.ShardStatus(shard, depth == null ? 0 : (Long) depth[0],
        oldest == null ? null : nonNegative(Duration.between(oldest.toInstant(), now)),
        new TopicStatus.ShardStatus.Lease(lease == null ? null : (String) lease[0], lease == null ? 0 : (Long) lease[1],
            expires == null ? null : expires.toInstant(), lease != null && (Boolean) lease[3]),
        new TopicStatus.ShardStatus.Stream(key, exists, length, first, age(first, now), last, age(last, now)),
        slotOf(key), nodeOf(key), lease == null || lease[4] == null ? null : ((Timestamp) lease[4]).toInstant());
  }

  private int slotOf(String key) {
    return redis instanceof RedisClusterClient ? JedisClusterCRC16.getSlot(key) : -1;
  }

  /** The master serving the key's slot, from the client's slot map (refreshed by every MOVED it follows). */
  private String nodeOf(String key) {
    if (!(redis instanceof RedisClusterClient cluster)) {
      return null;
    }
    try (redis.clients.jedis.Connection c = cluster.getConnectionFromSlot(JedisClusterCRC16.getSlot(key))) {
      return c.getHostAndPort().toString();
    }
  }

  private ConsumerStatus streamGroup(String topic, int shards, String group) {
    try (StreamConsumer probe = probe(StreamConsumer.builder(dataSource, redisSpec), topic, shards, group)
        .statusScanLimit(statusScanLimit).build()) {
      return probe.status();
    }
  }

  private ListStatus listGroup(String topic, int shards, String group) {
    try (ListConsumer probe = probe(ListConsumer.builder(dataSource, redisSpec), topic, shards, group).build()) {
      return probe.status();
    }
  }

  private <B extends ConsumerBuilder<B>> B probe(B builder, String topic, int shards, String group) {
    return builder.schema(schema).keyPrefix(keyPrefix).topic(TopicConfig.of(topic).withShards(Math.max(1, shards)))
        .group(group).batchHandler(NEVER);
  }

  private List<String> deadLetterGroups(Connection c, String topic) throws SQLException {
    List<String> names = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement("SELECT DISTINCT consumer_group FROM " + schema
        + ".dead_letter WHERE topic = ? ORDER BY 1")) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    }
    return names;
  }

  private interface Row {
    Object[] read(ResultSet rs) throws SQLException;
  }

  private static Map<Integer, Object[]> perShard(Connection c, String sql, String topic, Row row)
      throws SQLException {
    Map<Integer, Object[]> byShard = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          byShard.put(rs.getInt(1), row.read(rs));
        }
      }
    }
    return byShard;
  }

  private static Duration age(String entryId, Instant now) {
    if (entryId == null) {
      return null;
    }
    return nonNegative(Duration.ofMillis(now.toEpochMilli()
        - Long.parseLong(entryId.substring(0, entryId.indexOf('-')))));
  }

  private static Duration nonNegative(Duration d) {
    return d.isNegative() ? Duration.ZERO : d;
  }

  @Override
  public void close() {
    redis.close();
  }
}
