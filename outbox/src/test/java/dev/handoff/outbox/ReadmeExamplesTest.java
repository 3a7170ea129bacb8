package dev.handoff.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.zip.CRC32;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.TableField;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.impl.TableImpl;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java examples of README.md, line for line (DocExamplesTest checks it), run as written: in a database of the
 * test's own, whose handoff schema has the default name {@code handoff}, as a deployment has it.
 */
@HandoffTest(migrate = false)
class ReadmeExamplesTest {

  private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  private static final PaymentTable PAYMENT = new PaymentTable();

  private static DataSource dataSource;

  @BeforeAll
  static void databaseWithTheDefaultSchema(TestEnvironment env) throws SQLException {
    dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE payment (id text PRIMARY KEY, account text, amount_cents bigint NOT NULL)");
    }
  }

  @Test
  void appendInYourTransactionWithPlainJdbc() throws SQLException {
    String paymentId = "pay-jdbc";
    String account = "acct-1";
    long amountCents = 1250;

    Outbox outbox = Outbox.builder().schema("handoff").build();       // thread-safe, one per application

    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);                                        // an auto-commit connection is refused
      insertPayment(tx, paymentId, account, amountCents);             // your business rows
      outbox.append(tx, Message.builder("payments", "payment.created")
          .key(paymentId)                                             // same key, same shard: see the order rule below
          .jsonPayload("{\"payment_id\":\"" + paymentId + "\",\"amount_cents\":" + amountCents + "}")
          .build());
      tx.commit();                                                    // the row and the message, or neither
    }

    assertThat(query("SELECT account || ' ' || amount_cents FROM payment WHERE id = 'pay-jdbc'"))
        .isEqualTo("acct-1 1250");
    assertThat(query("SELECT topic || ' ' || type || ' ' || shard || ' ' || convert_from(payload, 'UTF8')"
        + " FROM handoff.outbox WHERE message_key = 'pay-jdbc'"))
        .isEqualTo("payments payment.created 0 {\"payment_id\":\"pay-jdbc\",\"amount_cents\":1250}");
  }

  @Test
  void appendInYourTransactionWithJooq() throws SQLException {
    Outbox outbox = Outbox.builder().schema("handoff").build();
    DSLContext dsl = DSL.using(dataSource, SQLDialect.POSTGRES);
    String paymentId = "pay-jooq";
    long amountCents = 990;
    String currentTraceparent = TRACEPARENT;

    JooqOutbox jooqOutbox = JooqOutbox.of(outbox);                    // thread-safe, one per application

    dsl.transaction(cfg -> {
      DSLContext tx = cfg.dsl();
      tx.insertInto(PAYMENT).set(PAYMENT.ID, paymentId).set(PAYMENT.AMOUNT_CENTS, amountCents).execute();
      jooqOutbox.append(tx, Message.builder("payments", "payment.created")
          .key(paymentId)
          .jsonPayload("{\"payment_id\":\"" + paymentId + "\"}")
          .traceparent(currentTraceparent)                            // W3C trace context, carried to the consumer
          .build());
    });

    assertThat(query("SELECT amount_cents::text FROM payment WHERE id = 'pay-jooq'")).isEqualTo("990");
    assertThat(query("SELECT convert_from(payload, 'UTF8') FROM handoff.outbox WHERE message_key = 'pay-jooq'"))
        .isEqualTo("{\"payment_id\":\"pay-jooq\"}");
    assertThat(dev.handoff.core.internal.Json.readStringMap(
            query("SELECT headers::text FROM handoff.outbox WHERE message_key = 'pay-jooq'")))
        .containsExactlyInAnyOrderEntriesOf(Map.of("content-type", "application/json", "traceparent", TRACEPARENT));
  }

  @Test
  void chooseTheBoundPerTopic() throws SQLException {
    Outbox outbox = Outbox.builder()
        .topic(TopicConfig.of("payments").withShards(4)
            .withCapacity(CapacityPolicy.waitUpTo(100_000, Duration.ofSeconds(2))))  // or reject(100_000)
        .build();

    assertThat(outbox.config().topic("payments")).isEqualTo(
        new TopicConfig("payments", 4, new CapacityPolicy.Wait(100_000, Duration.ofSeconds(2))));
    AppendedMessage appended;
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      appended = outbox.append(tx, Message.builder("payments", "payment.created").key("pay-bounded").build());
      tx.commit();
    }
    CRC32 crc = new CRC32();
    crc.update("pay-bounded".getBytes(StandardCharsets.UTF_8));
    assertThat(appended.shard()).as("one of the 4 shards, by key").isEqualTo((int) (crc.getValue() % 4));
    assertThat(query("SELECT shard::text FROM handoff.outbox WHERE message_key = 'pay-bounded'"))
        .isEqualTo(Integer.toString(appended.shard()));
  }

  @Test
  void schemaMigratesTheDefaultSchemaOrOneOfYourChoice(TestEnvironment env) throws SQLException {
    DataSource dataSource = env.newDatabase();

    HandoffMigrations.migrate(dataSource);            // schema "handoff"
    HandoffMigrations.migrate(dataSource, "billing"); // or a schema of your choice

    assertThat(HandoffMigrations.missingTable(dataSource, "handoff")).isEmpty();
    assertThat(HandoffMigrations.missingTable(dataSource, "billing")).isEmpty();
    assertThat(HandoffMigrations.migrate(dataSource)).as("nothing left to apply").isZero();
    assertThat(HandoffMigrations.migrate(dataSource, "billing")).as("nothing left to apply").isZero();
  }

  /** The business rows of the JDBC example. */
  private static void insertPayment(Connection tx, String id, String account, long amountCents)
      throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(
        "INSERT INTO payment (id, account, amount_cents) VALUES (?, ?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, account);
      ps.setLong(3, amountCents);
      ps.executeUpdate();
    }
  }

  private static String query(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      assertThat(rs.next()).as("a row from %s", sql).isTrue();
      String value = rs.getString(1);
      assertThat(rs.next()).as("one row from %s", sql).isFalse();
      return value;
    }
  }

  /** The payment table, as jOOQ's code generator declares one. */
  static final class PaymentTable extends TableImpl<Record> {

    final TableField<Record, String> ID = createField(DSL.name("id"), SQLDataType.CLOB);
    final TableField<Record, Long> AMOUNT_CENTS = createField(DSL.name("amount_cents"), SQLDataType.BIGINT);

    PaymentTable() {
      super(DSL.name("payment"));
    }
  }
}
