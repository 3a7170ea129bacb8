package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerException;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.internal.AclErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * Which shards a topic has, for an operator who knows only its name: the topic's {@code relay_lease} rows (one per
 * shard the relay ever served) when a database is at hand, else the stream keys present in Redis. The lease rows
 * are the better source: a shard whose stream Redis lost still has its row.
 *
 * <p>Thread-safe: it keeps no state besides its immutable settings.
 */
public final class TopicShards {

  private static final int SCAN_COUNT = 1_000;

  private final UnifiedJedis redis;
  private final String keyPrefix;
  private final DataSource dataSource;
  private final String schema;

  /** @param dataSource null to look in Redis only */
  public TopicShards(UnifiedJedis redis, String keyPrefix, DataSource dataSource, String schema) {
    this.redis = redis;
    this.keyPrefix = keyPrefix;
    this.dataSource = dataSource;
    this.schema = schema;
  }

  /**
   * The topic's shards, lowest first; empty when neither the database nor Redis knows the topic.
   *
   * @throws ConsumerException when the database cannot be read
   */
  public List<Integer> of(String topic) {
    TreeSet<Integer> shards = dataSource == null ? new TreeSet<>() : fromLeases(topic);
    return List.copyOf(shards.isEmpty() ? fromKeys(topic) : shards);
  }

  private TreeSet<Integer> fromLeases(String topic) {
    TreeSet<Integer> shards = new TreeSet<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT shard FROM " + schema + ".relay_lease WHERE topic = ? ORDER BY shard")) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          shards.add(rs.getInt(1));
        }
      }
    } catch (SQLException e) {
      throw new ConsumerException("cannot read the shards of topic '" + topic + "' from " + schema
          + ".relay_lease: " + e.getMessage(), e);
    }
    return shards;
  }

  private TreeSet<Integer> fromKeys(String topic) {
    // Topic names and key prefixes hold no glob characters (their patterns exclude them), so this matches literally.
    String prefix = StreamFormat.streamKey(keyPrefix, topic, 0);
    prefix = prefix.substring(0, prefix.length() - "0}".length());
    Pattern exact = Pattern.compile(Pattern.quote(prefix) + "(\\d{1,9})\\}");
    ScanParams params = new ScanParams().match(prefix + "*}").count(SCAN_COUNT);
    TreeSet<Integer> shards = new TreeSet<>();
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      String from = cursor;
      ScanResult<String> page = AclErrors.call("SCAN", List.of(), () -> redis.scan(from, params));
      for (String key : page.getResult()) {
        Matcher m = exact.matcher(key);
        if (m.matches()) {
          shards.add(Integer.parseInt(m.group(1)));
        }
      }
      cursor = page.getCursor();
    } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
    return shards;
  }
}
