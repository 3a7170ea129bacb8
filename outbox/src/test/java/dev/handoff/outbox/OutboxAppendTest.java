package dev.handoff.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.InvalidMessageException;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@HandoffTest
class OutboxAppendTest {

  private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private final TestEnvironment env;
  private final Outbox outbox;

  OutboxAppendTest(TestEnvironment env) {
    this.env = env;
    this.outbox = Outbox.builder()
        .schema(env.schema())
        .topic(TopicConfig.of("payments").withShards(4))
        .build();
  }

  @BeforeEach
  void emptyOutbox() {
    env.execute("TRUNCATE " + env.schema() + ".outbox");
  }

  @Test
  void committedAppendLeavesExactlyTheRowWithEveryField() throws SQLException {
    Message message = Message.builder("payments", "payment.created")
        .key("pay-42")
        .jsonPayload("{\"amount\":1250}")
        .header("tenant", "acme")
        .traceparent(TRACEPARENT)
        .build();

    AppendedMessage appended;
    try (Connection tx = transaction()) {
      appended = outbox.append(tx, message);
      tx.commit();
    }

    assertThat(appended.messageId().version()).isEqualTo(7);
    assertThat(appended.topic()).isEqualTo("payments");
    assertThat(appended.shard()).isBetween(0, 3);
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "select id, message_id, topic, shard, message_key, type, payload, headers::text, created_at, "
                + "stream_ms, stream_seq, published_at from outbox");
        ResultSet rs = ps.executeQuery()) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getLong("id")).isEqualTo(appended.outboxId());
      assertThat(rs.getObject("message_id", UUID.class)).isEqualTo(appended.messageId());
      assertThat(rs.getString("topic")).isEqualTo("payments");
      assertThat(rs.getInt("shard")).isEqualTo(appended.shard());
      assertThat(rs.getString("message_key")).isEqualTo("pay-42");
      assertThat(rs.getString("type")).isEqualTo("payment.created");
      assertThat(new String(rs.getBytes("payload"), StandardCharsets.UTF_8)).isEqualTo("{\"amount\":1250}");
      assertThat(dev.handoff.core.internal.Json.readStringMap(rs.getString("headers")))
          .containsExactlyInAnyOrderEntriesOf(Map.of(
              "content-type", "application/json", "tenant", "acme", "traceparent", TRACEPARENT));
      assertThat(rs.getObject("created_at", OffsetDateTime.class))
          .isBetween(OffsetDateTime.now().minusMinutes(1), OffsetDateTime.now().plusMinutes(1));
      assertThat(rs.getObject("stream_ms")).isNull();
      assertThat(rs.getObject("stream_seq")).isNull();
      assertThat(rs.getObject("published_at")).isNull();
      assertThat(rs.next()).isFalse();
    }
  }

  @Test
  void rolledBackAppendLeavesNoRow() throws SQLException {
    try (Connection tx = transaction()) {
      outbox.append(tx, Message.builder("payments", "payment.created").key("pay-1").build());
      assertThat(countIn(tx)).isEqualTo(1);
      tx.rollback();
    }
    assertThat(count()).isZero();
  }

  @Test
  void sameKeyAlwaysGoesToTheSameShard() throws SQLException {
    List<AppendedMessage> appended = new ArrayList<>();
    try (Connection tx = transaction()) {
      for (int i = 0; i < 20; i++) {
        appended.add(outbox.append(tx, Message.builder("payments", "payment.created").key("pay-7").build()));
        appended.add(outbox.append(tx, Message.builder("payments", "payment.created").key("other-" + i).build()));
      }
      tx.commit();
    }
    java.util.zip.CRC32 crc = new java.util.zip.CRC32();
    crc.update("pay-7".getBytes(StandardCharsets.UTF_8));
    int expected = (int) (crc.getValue() % 4);
    for (int i = 0; i < appended.size(); i += 2) {
      assertThat(appended.get(i).shard()).isEqualTo(expected);
    }
    assertThat(appended.stream().map(AppendedMessage::shard).distinct()).hasSizeGreaterThan(1);
    assertThat(env.queryLong("select count(*) from outbox where message_key = 'pay-7' and shard = ?", expected))
        .isEqualTo(20);
  }

  @Test
  void refusesAnAutocommitConnectionAndWritesNothing() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(true);
      Message message = Message.builder("payments", "payment.created").build();
      assertThatThrownBy(() -> outbox.append(c, message))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("auto-commit");
      assertThatThrownBy(() -> outbox.appendAll(c, List.of(message)))
          .isInstanceOf(IllegalStateException.class);
    }
    assertThat(count()).isZero();
  }

  @Test
  void refusesAnOversizePayloadNamingTheFieldAndTheLimit() throws SQLException {
    Outbox small = Outbox.builder().schema(env.schema()).maxPayloadBytes(1024).build();
    try (Connection tx = transaction()) {
      Message ok = Message.builder("payments", "payment.created").payload(new byte[1024]).build();
      Message big = Message.builder("payments", "payment.created").payload(new byte[1025]).build();
      small.append(tx, ok);
      assertThatThrownBy(() -> small.append(tx, big))
          .isInstanceOfSatisfying(InvalidMessageException.class, e -> assertThat(e.field()).isEqualTo("payload"))
          .hasMessageContaining("payload")
          .hasMessageContaining("1025 bytes")
          .hasMessageContaining("limit of 1024 bytes");
      assertThatThrownBy(() -> small.appendAll(tx, List.of(ok, big)))
          .isInstanceOf(InvalidMessageException.class);
      tx.commit();
    }
    assertThat(count()).isEqualTo(1);
  }

  @Test
  void refusesOversizeHeadersNamingTheFieldAndTheLimit() throws SQLException {
    Outbox small = Outbox.builder().schema(env.schema()).maxHeaderBytes(64).build();
    try (Connection tx = transaction()) {
      Message big = Message.builder("payments", "payment.created").header("note", "x".repeat(100)).build();
      assertThatThrownBy(() -> small.append(tx, big))
          .isInstanceOfSatisfying(InvalidMessageException.class, e -> assertThat(e.field()).isEqualTo("headers"))
          .hasMessageContaining("limit of 64 bytes");
      tx.commit();
    }
    assertThat(count()).isZero();
  }

  @Test
  void refusesBadSyntaxNamingTheField() {
    assertThatThrownBy(() -> Message.builder("pay{ments}", "payment.created"))
        .isInstanceOfSatisfying(InvalidMessageException.class, e -> assertThat(e.field()).isEqualTo("topic"))
        .hasMessageContaining("topic must match")
        .hasMessageContaining("'pay{ments}'");
    assertThatThrownBy(() -> Message.builder("", "payment.created"))
        .isInstanceOf(InvalidMessageException.class)
        .hasMessageContaining("topic");
    assertThatThrownBy(() -> Message.builder("payments", "payment created"))
        .isInstanceOfSatisfying(InvalidMessageException.class, e -> assertThat(e.field()).isEqualTo("type"));
    assertThatThrownBy(() -> Message.builder("payments", "t").key("k".repeat(513)))
        .isInstanceOfSatisfying(InvalidMessageException.class, e -> assertThat(e.field()).isEqualTo("key"))
        .hasMessageContaining("512");
    assertThatThrownBy(() -> Message.builder("payments", "t").traceparent("not-a-trace"))
        .isInstanceOf(InvalidMessageException.class)
        .hasMessageContaining("traceparent");
    assertThatThrownBy(() -> Message.builder("payments", "t").header("bad name", "v"))
        .isInstanceOf(InvalidMessageException.class)
        .hasMessageContaining("header name");
  }

  @Test
  void appendsABatchOfAThousandInOneTransaction() throws SQLException {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      batch.add(Message.builder("payments", "payment.created")
          .key("pay-" + i)
          .payload(("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8))
          .header("n", Integer.toString(i))
          .build());
    }
    List<AppendedMessage> appended;
    try (Connection tx = transaction()) {
      appended = outbox.appendAll(tx, batch);
      tx.commit();
    }

    assertThat(appended).hasSize(1000);
    assertThat(new HashSet<>(appended.stream().map(AppendedMessage::messageId).toList())).hasSize(1000);
    for (int i = 1; i < appended.size(); i++) {
      assertThat(appended.get(i).outboxId()).isGreaterThan(appended.get(i - 1).outboxId());
    }
    assertThat(count()).isEqualTo(1000);
    assertThat(env.queryLong("select count(*) from outbox where convert_from(payload, 'UTF8') = "
        + "'{\"n\":' || (headers->>'n') || '}' and message_key = 'pay-' || (headers->>'n')")).isEqualTo(1000);
    AppendedMessage last = appended.get(999);
    assertThat(env.queryLong("select count(*) from outbox where id = ? and message_id = ? and shard = ?",
        last.outboxId(), last.messageId(), last.shard())).isEqualTo(1);
  }

  @Test
  void rolledBackBatchLeavesNoRow() throws SQLException {
    try (Connection tx = transaction()) {
      outbox.appendAll(tx, List.of(
          Message.builder("payments", "a").build(), Message.builder("refunds", "b").build()));
      tx.rollback();
    }
    assertThat(count()).isZero();
  }

  @Test
  void appendsWithJooqInsideDslTransaction() {
    DSLContext dsl = DSL.using(env.dataSource(), SQLDialect.POSTGRES);
    JooqOutbox jooq = JooqOutbox.of(outbox);

    AppendedMessage appended = dsl.transactionResult(cfg ->
        jooq.append(cfg.dsl(), Message.builder("payments", "payment.created").key("pay-9").build()));
    assertThatThrownBy(() -> dsl.transaction(cfg -> {
          jooq.appendAll(cfg.dsl(), List.of(Message.builder("payments", "payment.created").build()));
          throw new IllegalStateException("business rule failed");
        }))
        .hasMessageContaining("business rule failed");
    assertThatThrownBy(() -> jooq.append(dsl, Message.builder("payments", "payment.created").build()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("auto-commit");

    assertThat(count()).isEqualTo(1);
    assertThat(env.queryLong("select count(*) from outbox where message_id = ? and message_key = 'pay-9'",
        appended.messageId())).isEqualTo(1);
  }

  @Test
  void thePlainJdbcApiNamesNoJooqTypeSoJooqStaysOptional() {
    List<String> jooqTypes = new ArrayList<>();
    for (Class<?> api : List.of(Outbox.class, OutboxBuilder.class, OutboxConfig.class, Message.class,
        Message.Builder.class, AppendedMessage.class)) {
      for (java.lang.reflect.Method m : api.getMethods()) {
        List<Class<?>> types = new ArrayList<>(List.of(m.getParameterTypes()));
        types.add(m.getReturnType());
        types.stream().filter(t -> t.getName().startsWith("org.jooq."))
            .forEach(t -> jooqTypes.add(api.getSimpleName() + "." + m.getName() + ": " + t.getName()));
      }
    }
    assertThat(jooqTypes).isEmpty();
  }

  private Connection transaction() throws SQLException {
    Connection c = env.dataSource().getConnection();
    c.setAutoCommit(false);
    return c;
  }

  private long count() {
    return env.queryLong("select count(*) from outbox");
  }

  private static long countIn(Connection tx) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("select count(*) from outbox");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
