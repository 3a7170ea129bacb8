package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.core.TopicMismatchException;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * A topic's shard count is declared once, in the database: the first relay (or consumer) that starts records it, one
 * that states another is refused in one line naming both, an outbox that states none uses the record, and one that
 * states another is refused.
 */
@HandoffTest
class TopicDeclarationTest {

  private final TestEnvironment env;

  TopicDeclarationTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aRelayStatingAnotherCountThanTheDeclaredOneIsRefusedAtStartAndPublishesNothing() throws Exception {
    try (Relay four = relay("relay-four", "orders", 4)) {
      four.relayOnce(); // records 4
    }
    String declaredAt = declaredAt("orders");
    RelayTestSupport.appendAll(env, Outbox.builder().schema(env.schema()).build(), messages("orders", 20));

    try (Relay narrow = relay("relay-narrow", "orders", 2)) {
      String line = "topic 'orders' has 4 shard(s), as declared in the database on " + declaredAt + ", and relay"
          + " relay-narrow states 2: give every outbox, relay and consumer of a topic the same count, or none so"
          + " that they read it (changing a topic's count: docs/scaling.md#choosing-the-shard-count)";
      assertThatThrownBy(narrow::start).isInstanceOf(TopicMismatchException.class).hasMessage(line);
      assertThatThrownBy(narrow::relayOnce).isInstanceOf(TopicMismatchException.class).hasMessage(line);
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is not null")).isZero();
    assertThat(env.queryLong("select shards from topic where name = 'orders'")).isEqualTo(4);

    try (Relay same = relay("relay-four", "orders", 4)) {
      assertThat(same.relayOnce().published()).isEqualTo(20);
    }
  }

  @Test
  void anOutboxStatingNoCountAppendsOverTheDeclaredShardsAndOneStatingAnotherIsRefused() throws Exception {
    try (Relay relay = relay("relay-payments", "payments", 4)) {
      relay.relayOnce(); // declares 4
    }
    Outbox plain = Outbox.builder().schema(env.schema()).build();
    RelayTestSupport.appendAll(env, plain, messages("payments", 40));
    assertThat(env.queryList("select distinct shard from outbox where topic = 'payments' order by shard",
        Integer.class)).containsExactly(0, 1, 2, 3);

    Outbox two = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("payments").withShards(2)).build();
    assertThatThrownBy(() -> RelayTestSupport.appendAll(env, two, messages("payments", 1)))
        .isInstanceOf(TopicMismatchException.class)
        .hasMessageStartingWith("topic 'payments' has 4 shard(s), as declared in the database on ")
        .hasMessageContaining(", and this outbox states 2: ");
    assertThat(env.queryLong("select count(*) from outbox where topic = 'payments'")).isEqualTo(40);
  }

  @Test
  void anOutboxThatAppendsBeforeAnyCountIsOnRecordUsesItsOwnAndIsRefusedOnceAnotherIsRecorded() throws Exception {
    Outbox two = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("refunds").withShards(2)).build();
    RelayTestSupport.appendAll(env, two, messages("refunds", 5));
    assertThat(env.queryLong("select count(*) from topic where name = 'refunds'")).as("an append records nothing")
        .isZero();

    try (Relay relay = relay("relay-refunds", "refunds", 3)) {
      relay.relayOnce(); // the first to record: 3
    }
    assertThatThrownBy(() -> RelayTestSupport.appendAll(env, two, messages("refunds", 1)))
        .isInstanceOf(TopicMismatchException.class)
        .hasMessageContaining("has 3 shard(s)");
    assertThat(env.queryLong("select count(*) from outbox where topic = 'refunds'")).isEqualTo(5);
  }

  @Test
  void anApplicationRoleGrantedBeforeTheTableStillAppendsWithItsOwnCountAndSaysSoOnce() throws Exception {
    try (DatabaseRole role = env.newRole().grant(HandoffGrants.Role.APPLICATION)
            .execute("REVOKE SELECT ON " + env.schema() + ".topic FROM ROLE");
        LogCapture logs = LogCapture.start()) {
      DataSource app = role.newDataSource(1);
      Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("legacy").withShards(2)).build();
      for (int i = 0; i < 3; i++) {
        try (Connection tx = app.getConnection()) {
          tx.setAutoCommit(false);
          outbox.append(tx, messages("legacy", 1).get(0));
          tx.commit();
        }
      }
      assertThat(env.queryLong("select count(*) from outbox where topic = 'legacy'")).isEqualTo(3);
      assertThat(logs.warnings()).filteredOn(l -> l.contains("cannot read " + env.schema() + ".topic"))
          .singleElement().asString().contains("apply the application role's grants again after migration V5");
    }
  }

  private String declaredAt(String topic) {
    return env.queryList("select declared_at from topic where name = ?", Timestamp.class, topic).get(0)
        .toInstant().toString();
  }

  private Relay relay(String owner, String topic, int shards) {
    return Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic).withShards(shards)).owner(owner).build();
  }

  private static List<Message> messages(String topic, int n) {
    List<Message> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(Message.builder(topic, "test").key("k" + i).payload("p" + i).build());
    }
    return out;
  }
}
