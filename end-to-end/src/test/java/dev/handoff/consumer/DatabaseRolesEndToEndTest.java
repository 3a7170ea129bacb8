package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * handoff end to end with each component under its own least-privilege role (HandoffGrants): the application
 * appends, the relay publishes and purges the outbox, the consumer handles (its handler's table granted by the
 * test), dead-letters a poison message and purges its inbox, and the operator reads the status, retries the dead
 * letter and purges markers. Each role is refused what belongs to another.
 */
@HandoffTest
class DatabaseRolesEndToEndTest {

  private static final int MESSAGES = 20;

  private final TestEnvironment env;

  DatabaseRolesEndToEndTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void everyComponentRunsUnderItsOwnRole(Transport transport) throws Exception {
    String topic = "roles-" + transport.name().toLowerCase(Locale.ROOT);
    String group = "g-" + transport.name().toLowerCase(Locale.ROOT);
    Fixture f = new Fixture(env, topic);
    String effects = env.schema() + "." + f.effects;
    // The handler's own table is the application's to grant; bigserial takes its ids from a sequence.
    String handlerTable = "GRANT INSERT ON " + effects + " TO ROLE; GRANT USAGE ON SEQUENCE " + effects
        + "_id_seq TO ROLE";
    DataSource appDb = env.newRole().grant(Role.APPLICATION).newDataSource(2);
    DatabaseRole relayRole = env.newRole().grant(Role.RELAY);
    DatabaseRole consumerRole = env.newRole().grant(Role.CONSUMER).execute(handlerTable);
    DatabaseRole operatorRole = env.newRole().grant(Role.OPERATOR).execute(handlerTable);
    DataSource relayDb = relayRole.newDataSource(3);
    DataSource consumerDb = consumerRole.newDataSource(4);
    DataSource operatorDb = operatorRole.newDataSource(2);

    List<UUID> ids = append(appDb, topic);
    UUID poison = ids.get(7);

    RelayBuilder relayBuilder = Relay.builder(relayDb, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic)).outboxRetention(Duration.ofMillis(1));
    try (Relay relay = (transport == Transport.LIST ? relayBuilder.listTransport(1_000) : relayBuilder).build()) {
      TransportSide.publishAll(env, relay);

      try (HandoffConsumer consumer = consumer(transport, consumerDb, f, group, true)) {
        consumer.start();
        ConsumerTestKit.await("19 handled and the poison message dead-lettered", Duration.ofSeconds(30),
            () -> f.effectCount(group) == MESSAGES - 1 && deadLetters(group, "dead") == 1);
        awaitDrained(consumer);
      }
      assertThat(f.inboxCount(group, "processed")).isEqualTo(MESSAGES - 1);
      assertThat(f.inboxCount(group, "dead")).isEqualTo(1);

      // The operator: status, then the dead letter retried with a handler that now succeeds.
      try (HandoffConsumer operator = consumer(transport, operatorDb, f, group, false)) {
        assertThat(operator.status().deadLetters()).isEqualTo(1);
        List<DeadLetter> dead = operator.deadLetters(10);
        assertThat(dead).hasSize(1);
        assertThat(dead.get(0).messageId()).isEqualTo(poison);
        assertThat(operator.retry(dead.get(0).id())).isTrue();
        assertThat(operator.status().deadLetters()).isZero();
      }
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.effectCount(group, poison)).isEqualTo(1);
      assertThat(deadLetters(group, "retried")).isEqualTo(1);
      assertThat(f.inboxCount(group, "processed")).isEqualTo(MESSAGES);

      // A replay from the outbox, as the consumer role: everything is a duplicate.
      try (HandoffConsumer consumer = consumer(transport, consumerDb, f, group, false)) {
        ReplayResult replay = consumer.replayFromOutbox(OutboxRange.all());
        assertThat(replay.duplicates()).isEqualTo(MESSAGES);
        assertThat(replay.handled()).isZero();
      }
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES);

      // The relay's outbox retention, as the relay role.
      TransportSide.awaitDatabaseClockPast(env, Duration.ofMillis(5));
      assertThat(relay.maintainOnce().purged()).isEqualTo(MESSAGES);
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", topic)).isZero();
    assertThat(env.queryLong("SELECT sum(rows) FROM outbox_purged WHERE topic = ?", topic)).isEqualTo(MESSAGES);

    // The inbox purges: the operator's of the oldest half, the consumer's of what is past its dedup window.
    if (transport == Transport.STREAM) {
      env.redis().xtrim(StreamFormat.streamKey(env.keyPrefix(), topic, 0), 0, false);
    }
    age(group, ids.subList(0, 10), 20);
    age(group, ids.subList(10, MESSAGES), 9);
    try (HandoffConsumer operator = consumer(transport, operatorDb, f, group, false)) {
      assertThat(operator.purgeInbox(Instant.now().minus(Duration.ofDays(15)))).isEqualTo(10);
    }
    try (HandoffConsumer consumer = consumer(transport, consumerDb, f, group, false)) {
      InboxPurgeResult purged = consumer.purgeInbox();
      assertThat(purged.deleted()).isEqualTo(10);
      assertThat(purged.keptAny()).isFalse();
    }
    assertThat(f.inboxCount(group)).isZero();

    String insertOutbox = "INSERT INTO outbox (message_id, topic, shard, type, payload)"
        + " VALUES (gen_random_uuid(), 't', 0, 't', '\\x00')";
    for (String refused : List.of(insertOutbox, "UPDATE outbox SET published_at = NULL", "DELETE FROM outbox",
        "UPDATE relay_lease SET owner = 'me'", "DELETE FROM dead_letter")) {
      assertRefused(consumerDb, refused);
    }
    // The operator may purge dead letters (DELETE) and request their retry (retry_requested_at), never rewrite what
    // a consumer recorded.
    for (String refused : List.of(insertOutbox, "SELECT payload FROM outbox", "UPDATE dead_letter SET error = 'e'",
        "UPDATE dead_letter SET retry_error = 'e'", "UPDATE dead_letter SET retry_failed_at = now()",
        "INSERT INTO dead_letter (consumer_group, topic, stream_key, stream_id, deliveries, error)"
            + " VALUES ('g', 't', 'k', '1-1', 1, 'e')", "SELECT batch_ids FROM relay_lease",
        "DELETE FROM outbox_purged", "DELETE FROM outbox")) {
      assertRefused(operatorDb, refused);
    }
    assertRefused(appDb, "SELECT count(*) FROM dead_letter");
    assertRefused(appDb, "DELETE FROM inbox");
  }

  /**
   * A consumer of the topic on {@code db}; its handler writes an effect row, and with {@code poisonFails} refuses
   * the payload "poison" (an ordinary failure, not the environment's), which ends in a dead letter.
   */
  private HandoffConsumer consumer(Transport transport, DataSource db, Fixture f, String group, boolean poisonFails) {
    MessageHandler effect = f.effect(group, null);
    MessageHandler handler = (tx, m) -> {
      if (poisonFails && "poison".equals(new String(m.payload(), StandardCharsets.UTF_8))) {
        throw new IllegalArgumentException("poison payment");
      }
      effect.handle(tx, m);
    };
    if (transport == Transport.STREAM) {
      return settings(StreamConsumer.builder(db, RedisConnectionSpec.of(f.redisUri)), f, group, handler).minIdle(Duration.ofSeconds(2))
          .reclaimInterval(Duration.ofMillis(50)).maxDeliveries(2)
          .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build();
    }
    return settings(ListConsumer.builder(db, RedisConnectionSpec.of(f.redisUri)), f, group, handler).heartbeatTtl(Duration.ofSeconds(5))
        .heartbeatInterval(Duration.ofMillis(500)).maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build();
  }

  private <B extends ConsumerBuilder<B>> B settings(B builder, Fixture f, String group, MessageHandler handler) {
    return builder.schema(env.schema()).keyPrefix(env.keyPrefix()).topic(f.topic).group(group).handler(handler)
        .block(Duration.ofMillis(100));
  }

  private static void awaitDrained(HandoffConsumer consumer) {
    if (consumer instanceof StreamConsumer s) {
      ConsumerTestKit.awaitDrained(s, Duration.ofSeconds(20));
    } else {
      ConsumerTestKit.awaitDrained((ListConsumer) consumer, Duration.ofSeconds(20));
    }
  }

  private List<UUID> append(DataSource appDb, String topic) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < MESSAGES; i++) {
      messages.add(Message.builder(topic, "test.event").key("k" + i).payload(i == 7 ? "poison" : "p" + i).build());
    }
    try (Connection tx = appDb.getConnection()) {
      tx.setAutoCommit(false);
      List<AppendedMessage> appended = outbox.appendAll(tx, messages);
      tx.commit();
      return appended.stream().map(AppendedMessage::messageId).toList();
    }
  }

  private long deadLetters(String group, String status) {
    return env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = ? AND status = ?", group, status);
  }

  private void age(String group, List<UUID> ids, int days) {
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE inbox SET processed_at = now() - make_interval(days => ?)"
            + " WHERE consumer_group = ? AND message_id = ANY(?)")) {
      ps.setInt(1, days);
      ps.setString(2, group);
      ps.setArray(3, c.createArrayOf("uuid", ids.toArray()));
      assertThat(ps.executeUpdate()).isEqualTo(ids.size());
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void assertRefused(DataSource db, String sql) {
    assertThatThrownBy(() -> {
      try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
        s.execute(sql);
      }
    }).as(sql).isInstanceOfSatisfying(SQLException.class,
        e -> assertThat(e.getSQLState()).as(sql + ": " + e.getMessage()).isEqualTo("42501"));
  }
}
