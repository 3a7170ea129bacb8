package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.core.TopicMismatchException;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.util.Locale;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer reads its topic's shard count from the database when it states none, and is refused at start, in one
 * line naming both counts, when it states another: on streams and on lists.
 */
@HandoffTest
class ConsumerTopicDeclarationTest {

  private final TestEnvironment env;

  ConsumerTopicDeclarationTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aConsumerStatingAnotherCountIsRefusedAndOneStatingNoneReadsTheDeclaredOne(Transport transport) {
    String topic = "declared-" + transport.name().toLowerCase(Locale.ROOT);
    env.execute("INSERT INTO topic (name, shards) VALUES ('" + topic + "', 4)");
    String declaredAt = env.queryList("SELECT declared_at FROM topic WHERE name = ?", java.sql.Timestamp.class, topic)
        .get(0).toInstant().toString();
    Fixture f = new Fixture(env, topic);

    try (HandoffConsumer byName = builder(transport, f, "by-name").build()) {
      assertThat(byName.config().topic().shards()).as("read from the database").isEqualTo(4);
    }

    String kind = transport == Transport.LIST ? "list consumer" : "consumer";
    String line = "topic '" + topic + "' has 4 shard(s), as declared in the database on " + declaredAt + ", and "
        + kind + " of group 'stated' states 2: give every outbox, relay and consumer of a topic the same count, or"
        + " none so that they read it (changing a topic's count: docs/scaling.md#choosing-the-shard-count)";
    try (HandoffConsumer stated = builder(transport, f, "stated").topic(TopicConfig.of(topic).withShards(2))
        .build()) {
      assertThatThrownBy(stated::start).isInstanceOf(TopicMismatchException.class).hasMessage(line);
      assertThatThrownBy(stated::pollOnce).isInstanceOf(TopicMismatchException.class).hasMessage(line);
    }
    assertThat(env.queryLong("SELECT shards FROM topic WHERE name = ?", topic)).isEqualTo(4);
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aConsumerBuiltBeforeItsRelayRecordedTheCountSaysItTookOneShardAndOneBuiltAfterReadsTheCount(
      Transport transport) throws Exception {
    String topic = "unrecorded-" + transport.name().toLowerCase(Locale.ROOT);
    Fixture f = new Fixture(env, topic);
    Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic).withShards(3)).build();
    try (LogCapture logs = LogCapture.start();
        HandoffConsumer early = builder(transport, f, "early").build();
        relay) {
      assertThat(early.config().topic().shards()).isEqualTo(1);
      String said = "consumer group 'early': topic '" + topic + "' has no shard count on record in schema '"
          + env.schema() + "' yet, so this consumer takes 1 shard; if its relay records another count, start()"
          + " refuses it: build consumers after the relay has started, or state the count with"
          + " topic(TopicConfig.of(\"" + topic + "\").withShards(n))";
      assertThat(logs.warnings()).filteredOn(l -> l.startsWith("WARN ") && l.endsWith(said)).hasSize(1);
      relay.start();
      assertThatThrownBy(early::start).isInstanceOf(TopicMismatchException.class)
          .hasMessageContaining("topic '" + topic + "' has 3 shard(s)").hasMessageContaining("states 1");
      try (HandoffConsumer late = builder(transport, f, "late").build()) {
        assertThat(late.config().topic().shards()).isEqualTo(3);
      }
    }
  }

  private ConsumerBuilder<?> builder(Transport transport, Fixture f, String group) {
    return transport == Transport.LIST
        ? TransportSide.listConsumer(env, f, group).handler(f.effect(group, null))
        : f.consumer(group);
  }
}
