package dev.handoff.ledger.demo;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListConsumerBuilder;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * The PostgreSQL and Redis the demo and the benchmarks (bench, the soak) run against.
 *
 * @param redis the client for the sample's own Redis commands
 * @param redisSpec the server (or cluster), login and TLS that handoff's relay and consumers open their own pools to
 */
public record LedgerServers(DataSource dataSource, UnifiedJedis redis, RedisConnectionSpec redisSpec) {

  /** A ledger consumer's builder, logged in to this Redis. */
  public LedgerConsumerBuilder ledgerConsumer() {
    return new LedgerConsumerBuilder(dataSource, redisSpec);
  }

  /**
   * A stream consumer of {@code group} that is only asked for its status: never started, so it reads nothing and
   * handles nothing.
   */
  public StreamConsumerBuilder streamProbe(String schema, String keyPrefix, TopicConfig topic, String group) {
    return probe(StreamConsumer.builder(dataSource, redisSpec), schema, keyPrefix, topic, group);
  }

  /** As {@link #streamProbe}, on the list transport: never started, so no heartbeat, no registration. */
  public ListConsumerBuilder listProbe(String schema, String keyPrefix, TopicConfig topic, String group) {
    return probe(ListConsumer.builder(dataSource, redisSpec), schema, keyPrefix, topic, group);
  }

  private <B extends ConsumerBuilder<B>> B probe(B builder, String schema, String keyPrefix, TopicConfig topic,
      String group) {
    return builder
        .schema(schema)
        .keyPrefix(keyPrefix)
        .topic(topic)
        .group(group)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        });
  }
}
