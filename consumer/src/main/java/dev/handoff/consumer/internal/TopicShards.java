package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerException;
import dev.handoff.core.internal.AclErrors;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.TreeSet;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * Which shards a topic has, for an operator who knows only its name, with {@link TopicDiscovery}'s two sources in
 * turn: the topic's {@code relay_lease} rows (one per shard a relay ever served) when a database is at hand, else
 * (or when it has none) the keys present in Redis. The lease rows come first: a shard whose stream Redis lost still
 * has its row, and reading them needs no {@code SCAN}, which ACL key patterns do not restrict.
 *
 * <p>Thread-safe: it keeps no state besides its immutable settings.
 */
public final class TopicShards {

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
    TopicDiscovery.Found found = new TopicDiscovery.Found();
    if (dataSource != null) {
      try (Connection c = dataSource.getConnection()) {
        TopicDiscovery.leases(c, schema, keyPrefix, topic, found);
      } catch (SQLException e) {
        throw new ConsumerException("cannot read the shards of topic '" + topic + "' from " + schema
            + ".relay_lease: " + e.getMessage(), e);
      }
    }
    if (found.shards().isEmpty()) {
      AclErrors.call("SCAN", List.of(), () -> {
        TopicDiscovery.scanKeys(redis, keyPrefix, topic, found);
        return null;
      });
    }
    return List.copyOf(found.shards().getOrDefault(topic, new TreeSet<>()));
  }
}
