package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import javax.sql.DataSource;

/** Consumers that are only asked for their status, for the benchmarks' samplers. */
final class Probes {

  private Probes() {}

  /** A stream consumer of {@code group}, never started: it reads nothing and handles nothing. */
  static StreamConsumerBuilder stream(DataSource dataSource, RedisConnectionSpec redis, String schema, String prefix,
      TopicConfig topic, String group) {
    return StreamConsumer.builder(dataSource, redis).schema(schema).keyPrefix(prefix).topic(topic).group(group)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        });
  }
}
