package dev.handoff.consumer.internal;

import dev.handoff.core.Transport;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * Which topics and shards exist, from the relay's leases and from the keys in Redis: a topic that was configured on
 * a relay has lease rows even before anything was published, and one whose rows were all published and whose lease
 * rows are gone (another schema, a lost database) still has its keys.
 */
final class TopicDiscovery {

  /** Shards per topic, and the transports whose keys exist per topic. */
  record Found(Map<String, SortedSet<Integer>> shards, Map<String, Set<Transport>> transports) {

    Found() {
      this(new TreeMap<>(), new TreeMap<>());
    }

    void addShard(String topic, int shard) {
      shards.computeIfAbsent(topic, t -> new TreeSet<>()).add(shard);
    }

    void addTransport(String topic, Transport transport) {
      transports.computeIfAbsent(topic, t -> EnumSet.noneOf(Transport.class)).add(transport);
    }
  }

  private TopicDiscovery() {}

  /** What the leases of {@code keyPrefix} (or of no prefix yet) and the keys under it say; one topic or all. */
  static Found discover(Connection c, String schema, UnifiedJedis redis, String keyPrefix, String topic)
      throws SQLException {
    Found found = new Found();
    leases(c, schema, keyPrefix, topic, found);
    scanKeys(redis, keyPrefix, topic, found);
    return found;
  }

  /** Adds the topics and shards of the leases of {@code keyPrefix} (or of no prefix yet); one topic or all. */
  static void leases(Connection c, String schema, String keyPrefix, String topic, Found found) throws SQLException {
    String sql = "SELECT topic, shard FROM " + schema + ".relay_lease WHERE (key_prefix = ? OR key_prefix IS NULL)"
        + (topic == null ? "" : " AND topic = ?");
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, keyPrefix);
      if (topic != null) {
        ps.setString(2, topic);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.addShard(rs.getString(1), rs.getInt(2));
        }
      }
    }
  }

  /**
   * Adds the topics, shards and transports of the keys under {@code keyPrefix}, with a cursor over the key space. A
   * Redis user without {@code SCAN} (the operator's least-privilege rule leaves it out, because ACL key patterns do
   * not filter it) adds nothing here, and the leases alone answer.
   */
  static void scanKeys(UnifiedJedis redis, String keyPrefix, String topic, Found found) {
    try {
      scanEveryNode(redis, keyPrefix, topic, found);
    } catch (JedisDataException e) {
      if (e.getMessage() == null || !e.getMessage().startsWith("NOPERM")) {
        throw e;
      }
    }
  }

  private static void scanEveryNode(UnifiedJedis redis, String keyPrefix, String topic, Found found) {
    if (redis instanceof RedisClusterClient cluster) {
      // A cluster's keys are spread over its masters, and SCAN sees one node's: scan each (a replica adds nothing
      // new, and what it repeats is a set's).
      for (ConnectionPool node : cluster.getClusterNodes().values()) {
        try (Jedis jedis = new Jedis(node.getResource())) {
          scanNode(jedis::scan, keyPrefix, topic, found);
        }
      }
      return;
    }
    scanNode(redis::scan, keyPrefix, topic, found);
  }

  private interface Scanner {
    ScanResult<String> scan(String cursor, ScanParams params);
  }

  private static void scanNode(Scanner redis, String keyPrefix, String topic, Found found) {
    // Prefixes and topic names cannot hold glob characters (their patterns exclude them), so MATCH is exact.
    Pattern key = Pattern.compile(Pattern.quote(keyPrefix) + ":\\{([A-Za-z0-9._-]+):(\\d{1,9})\\}(.*)");
    ScanParams params = new ScanParams().match(keyPrefix + ":{" + (topic == null ? "" : topic + ":") + "*")
        .count(1000);
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = redis.scan(cursor, params);
      for (String k : page.getResult()) {
        Matcher m = key.matcher(k);
        if (!m.matches()) {
          continue;
        }
        String rest = m.group(3);
        Transport transport = rest.isEmpty() || rest.equals(":relay") ? Transport.STREAM
            : rest.startsWith(":list") ? Transport.LIST : null;
        if (transport != null) {
          found.addShard(m.group(1), Integer.parseInt(m.group(2)));
          found.addTransport(m.group(1), transport);
        }
      }
      cursor = page.getCursor();
    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
  }
}
