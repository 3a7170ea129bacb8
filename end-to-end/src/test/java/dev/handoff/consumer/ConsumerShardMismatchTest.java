package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Health;
import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.util.Locale;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer that declares fewer shards than the relay never reads the others. The topic's count on record refuses
 * such a consumer at start (ConsumerTopicDeclarationTest); one started before the count was on record (before
 * migration V5) is still found out: its health says so, DOWN, naming the first shard it does not read and both
 * counts, and a consumer that declares them all is not affected.
 */
@HandoffTest
class ConsumerShardMismatchTest {

  private final TestEnvironment env;

  ConsumerShardMismatchTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aConsumerDeclaringFewerShardsThanTheRelayPublishesIsDownNamingTheShardItNeverReads(Transport transport) {
    String topic = "narrow-" + transport.name().toLowerCase(Locale.ROOT);
    Fixture f = new Fixture(env, topic);
    // What a relay that declares 3 shards leaves in Redis: a key for each.
    String third = transport == Transport.LIST ? ListFormat.listKey(env.keyPrefix(), topic, 2)
        : StreamFormat.streamKey(env.keyPrefix(), topic, 2);
    if (transport == Transport.LIST) {
      env.redis().rpush(third, "not read");
    } else {
      f.publish(f.message(), null, 2);
    }

    try (LogCapture logs = LogCapture.start();
        HandoffConsumer narrow = consumer(transport, f, "narrow", 2);
        HandoffConsumer wide = consumer(transport, f, "wide", 3)) {
      narrow.start();
      // As if the narrow one had started before the count was on record.
      env.execute("DELETE FROM topic WHERE name = '" + topic + "'");
      wide.start();

      Health down = narrow.health();
      assertThat(down.status()).isEqualTo(Health.Status.DOWN);
      assertThat(down.reasons()).singleElement().satisfies(r -> {
        assertThat(r.code()).isEqualTo("shards-mismatch");
        assertThat(r.message()).endsWith("'narrow': topic '" + topic + "' has a key for shard 2 (" + third
            + ") that this consumer never reads: it declares 2 shard(s) (0..1), fewer than the relay that publishes"
            + " it; every outbox, relay and consumer of a topic must declare the same shard count"
            + " (TopicConfig.withShards)");
      });
      assertThat(wide.health().has("shards-mismatch")).isFalse();
      assertThat(logs.warnings()).filteredOn(l -> l.contains("never reads")).hasSize(1);
    }
  }

  private HandoffConsumer consumer(Transport transport, Fixture f, String group, int shards) {
    TopicConfig topic = TopicConfig.of(f.topic).withShards(shards);
    return transport == Transport.LIST
        ? TransportSide.listConsumer(env, f, group).topic(topic).handler(f.effect(group, null)).build()
        : f.consumer(group).topic(topic).build();
  }
}
