package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListConsumerBuilder;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.TopicConfig;
import java.util.Set;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.UnifiedJedis;

/**
 * The PostgreSQL and Redis the demo and the benchmarks (bench, the soak) run against.
 *
 * @param redis the client for the sample's own Redis commands
 * @param redisServer where handoff's consumers open their own connections, with {@code redisConfig}
 * @param redisCluster the seeds of a Redis Cluster (then {@code redisServer} is one of them), empty for one server
 */
public record LedgerServers(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
    JedisClientConfig redisConfig, Set<HostAndPort> redisCluster) {

  /** The servers of a single Redis server. */
  public LedgerServers(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig) {
    this(dataSource, redis, redisServer, redisConfig, Set.of());
  }

  /** A ledger consumer's builder, logged in to this Redis. */
  public LedgerConsumer.Builder ledgerConsumer() {
    return LedgerConsumer.builder(dataSource, redisServer).redisConfig(redisConfig).redisCluster(redisCluster);
  }

  /**
   * A stream consumer of {@code group} that is only asked for its status: never started, so it reads nothing and
   * handles nothing.
   */
  public StreamConsumerBuilder streamProbe(String schema, String keyPrefix, TopicConfig topic, String group) {
    return probe(StreamConsumer.builder(dataSource, redisServer), schema, keyPrefix, topic, group);
  }

  /** As {@link #streamProbe}, on the list transport: never started, so no heartbeat, no registration. */
  public ListConsumerBuilder listProbe(String schema, String keyPrefix, TopicConfig topic, String group) {
    return probe(ListConsumer.builder(dataSource, redisServer), schema, keyPrefix, topic, group);
  }

  private <B extends ConsumerBuilder<B>> B probe(B builder, String schema, String keyPrefix, TopicConfig topic,
      String group) {
    return builder
        .redisConfig(redisConfig)
        .redisCluster(redisCluster)
        .schema(schema)
        .keyPrefix(keyPrefix)
        .topic(topic)
        .group(group)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        });
  }
}
