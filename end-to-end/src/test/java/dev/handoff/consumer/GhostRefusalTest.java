package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Transport;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer sharing the producer's database refuses ghosts when asked to: after a failover to an asynchronous
 * standby, Redis holds messages whose transactions the new primary never received. The database state such a
 * failover leaves is made here directly: one published message's outbox row is gone, and another's id was taken
 * by a different message (the new primary's identity sequence was behind). A message the retention purged, which
 * the purge log accounts for, is not a ghost.
 */
@HandoffTest
class GhostRefusalTest {

  private final TestEnvironment env;

  GhostRefusalTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aMessageTheDatabaseNoLongerHasIsDeadLetteredAsAGhostWhileAPurgedOneIsApplied(Transport transport)
      throws Exception {
    String t = transport.name().toLowerCase();
    Fixture f = new Fixture(env, "ghosts-" + t);
    String refusing = "refusing-" + t;
    String applying = "applying-" + t;
    try (Relay relay = TransportSide.relay(env, f.topic, transport).outboxRetention(Duration.ofMillis(1)).build();
        TransportSide refuser = side(transport, f, refusing, true);
        TransportSide applier = side(transport, f, applying, false)) {
      refuser.pollOnce(); // the groups exist before the relay trims anything
      applier.pollOnce();
      AppendedMessage purged = TransportSide.append(env, f.topic, 1, i -> "purged").get(0);
      TransportSide.publishAll(env, relay);
      TransportSide.awaitDatabaseClockPast(env, Duration.ofMillis(5));
      relay.maintainOnce();
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", f.topic)).isZero();
      assertThat(env.queryLong("SELECT sum(rows) FROM outbox_purged WHERE topic = ?", f.topic)).isEqualTo(1);
      List<AppendedMessage> later = TransportSide.append(env, f.topic, 3, i -> "later");
      TransportSide.publishAll(env, relay);
      AppendedMessage lost = later.get(0);
      AppendedMessage reused = later.get(1);
      AppendedMessage kept = later.get(2);
      sql("DELETE FROM outbox WHERE id IN (" + lost.outboxId() + ", " + reused.outboxId() + ")");
      sql("INSERT INTO outbox (id, message_id, topic, shard, type, payload, stream_ms, stream_seq, published_at)"
          + " OVERRIDING SYSTEM VALUE VALUES (" + reused.outboxId() + ", '" + UUID.randomUUID() + "', '" + f.topic
          + "', 0, 'other', '\\x00'::bytea, 1, 1, now())");

      TransportSide.drain(refuser);

      assertThat(f.effectCount(refusing, purged.messageId())).isEqualTo(1);
      assertThat(f.effectCount(refusing, kept.messageId())).isEqualTo(1);
      assertThat(f.effectCount(refusing)).isEqualTo(2);
      assertThat(f.inboxCount(refusing, "processed")).isEqualTo(2);
      assertThat(f.inboxCount(refusing, "dead")).isEqualTo(2);
      assertThat(deadLetterErrors(refusing, lost.messageId())).singleElement().asString()
          .startsWith("ghost: outbox row " + lost.outboxId() + " of message " + lost.messageId() + " (topic '"
              + f.topic + "') is not in this database and no purge accounts for it");
      assertThat(deadLetterErrors(refusing, reused.messageId())).singleElement().asString()
          .startsWith("ghost: outbox row " + reused.outboxId() + " of message " + reused.messageId());
      if (transport == Transport.STREAM) {
        assertThat(f.pendingTotal(refusing)).isZero();
        // Without the setting every message is applied, ghosts included: what the setting is for. (A list has no
        // groups: its one set of consumers shares it, so the refusing consumer took every element above.)
        TransportSide.drain(applier);
        assertThat(f.effectCount(applying)).isEqualTo(4);
        assertThat(env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = ?", applying)).isZero();
      }
      assertThat(refuser.pollOnce().isEmpty()).isTrue();
    }
  }

  @Test
  void aConsumerWhoseDatabaseNeverHeldTheTopicPausesInsteadOfDeadLetteringEverything() {
    Fixture f = new Fixture(env, "elsewhere");
    String group = "elsewhere";
    f.createGroupAtStart(group);
    f.publishMany(5); // entries of another database's outbox: no row of this topic was ever here
    try (StreamConsumer consumer = f.consumer(group).refuseGhosts(true).build()) {
      PollResult poll = consumer.pollOnce();

      assertThat(poll.read()).isEqualTo(5);
      assertThat(poll.failed()).isEqualTo(5); // abandoned: no verdict, no delivery counted
      assertThat(poll.deadLettered()).isZero();
    }
    try (StreamConsumer consumer = f.consumer(group).refuseGhosts(true).build()) {
      consumer.start();
      ConsumerTestKit.await("the worker to pause", Duration.ofSeconds(30), () -> consumer.health().reasons().stream()
          .anyMatch(r -> r.code().equals("not-the-producers-database")));

      assertThat(consumer.health().reasons()).singleElement().satisfies(r -> assertThat(r.message())
          .contains("refuseGhosts is on, but schema '" + env.schema() + "' of this consumer's database never held"
              + " an outbox row of topic 'elsewhere'"));
    }
    assertThat(f.effectCount(group)).isZero();
    assertThat(f.inboxCount(group)).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = ?", group)).isZero();
    assertThat(f.pendingTotal(group)).isEqualTo(5);
  }

  private List<String> deadLetterErrors(String group, UUID messageId) throws SQLException {
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT error FROM dead_letter WHERE consumer_group = ? AND message_id = ?")) {
      ps.setString(1, group);
      ps.setObject(2, messageId);
      List<String> out = new java.util.ArrayList<>();
      try (var rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = env.dataSource().getConnection(); var s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private TransportSide side(Transport transport, Fixture f, String group, boolean refuseGhosts) {
    return transport == Transport.STREAM
        ? TransportSide.of(f.consumer(group).handler(f.effect(group, null)).batchSize(100)
            .refuseGhosts(refuseGhosts).build())
        : TransportSide.of(TransportSide.listConsumer(env, f, group).handler(f.effect(group, null)).batchSize(100)
            .refuseGhosts(refuseGhosts).build());
  }
}
