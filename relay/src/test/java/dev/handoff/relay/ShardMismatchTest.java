package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.Health;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Rows on a shard that no relay declares would wait for good. The topic's recorded count (TopicDeclarationTest)
 * refuses every component that states another once it is on record; an outbox that appended before any relay or
 * consumer recorded it, rows from before migration V5, or a count changed by hand can still leave some. The relay
 * reports them as DOWN, naming the topic, the shard, the rows and its own count, until a relay that declares that
 * many shards publishes them.
 */
@HandoffTest
class ShardMismatchTest {

  private static final String TOPIC = "mismatched";

  private final TestEnvironment env;

  ShardMismatchTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void rowsOnAShardNoRelayDeclaresMakeTheRelayDownUntilARelayWithThatManyShardsPublishesThem() throws Exception {
    Outbox fourShards = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(TOPIC).withShards(4)).build();
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      batch.add(Message.builder(TOPIC, "order.placed").key("k" + i).payload("p" + i).build());
    }
    RelayTestSupport.appendAll(env, fourShards, batch);
    long onShard2 = env.queryLong("select count(*) from outbox where topic = ? and shard = 2", TOPIC);
    assertThat(onShard2).as("the keys spread over all four shards").isPositive();
    // No relay or consumer has recorded the topic's count yet: the outbox used its own, and the narrow relay that
    // starts next records 2.

    try (LogCapture logs = LogCapture.start();
        Relay narrow = relay("relay-narrow", 2)) {
      narrow.start();
      // Its two shards first: a relay that took some later could leave wide one of them and strand the other.
      await().atMost(Duration.ofSeconds(20)).until(() -> narrow.ownedShards().size() == 2);
      narrow.maintainOnce();

      Health down = narrow.health();
      assertThat(down.status()).isEqualTo(Health.Status.DOWN);
      assertThat(down.reasons()).singleElement().satisfies(r -> {
        assertThat(r.code()).isEqualTo("shards-mismatch");
        assertThat(r.message()).isEqualTo("relay relay-narrow: topic '" + TOPIC + "' has " + onShard2
            + " unpublished row(s) on shard 2, which no relay owns: this relay declares 2 shard(s) (0..1), fewer"
            + " than the outbox that appended them; every outbox, relay and consumer of a topic must declare the"
            + " same shard count (TopicConfig.withShards)");
      });
      narrow.maintainOnce();
      assertThat(logs.warnings()).filteredOn(l -> l.contains("which no relay owns")).hasSize(1);

      // The operator's repair: the count the rows were appended with, on record, and a relay that states it.
      env.execute("UPDATE topic SET shards = 4 WHERE name = '" + TOPIC + "'");
      try (Relay wide = relay("relay-wide", 4)) {
        wide.relayOnce(); // takes the two shards nobody holds, and publishes them
        assertThat(wide.ownedShards()).hasSize(2);
      }
      narrow.maintainOnce();

      assertThat(narrow.health().has("shards-mismatch")).isFalse();
      assertThat(env.queryLong("select count(*) from outbox where topic = ? and shard >= 2 and published_at is null",
          TOPIC)).isZero();
    }
  }

  private Relay relay(String owner, int shards) {
    return Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(TOPIC).withShards(shards)).owner(owner).idlePollInterval(Duration.ofMillis(50))
        .build();
  }
}
