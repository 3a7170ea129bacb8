package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxWriteException;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The least-privilege roles of {@link HandoffGrants}: the shipped files are what the API applies, each role holds
 * exactly the documented grants, the application appends and the relay publishes (streams and lists) and purges
 * with nothing more, and each is refused what it has no business doing.
 */
@HandoffTest
class DatabaseRolesTest {

  private final TestEnvironment env;

  DatabaseRolesTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member, outbox_purged");
  }

  @Test
  void theShippedFilesAreWhatTheApiRendersAndRuns() throws IOException {
    for (Role role : Role.values()) {
      String file;
      try (InputStream in = getClass().getClassLoader()
          .getResourceAsStream(HandoffGrants.LOCATION + "/" + role.fileName())) {
        assertThat(in).as(role.fileName()).isNotNull();
        file = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      String rendered = HandoffGrants.sql(role, "handoff", "svc");
      assertThat(rendered).isEqualTo(file.replace(":\"schema\"", "\"handoff\"").replace(":\"role\"", "\"svc\""));
      List<String> statements = HandoffGrants.statements(role, "handoff", "svc");
      assertThat(statements).hasSize(file.split("(?m)^GRANT ", -1).length - 1)
          .allSatisfy(s -> assertThat(s).startsWith("GRANT ").endsWith(" TO \"svc\"").doesNotContain(";", "--"));
    }
  }

  @Test
  void eachRoleHoldsExactlyTheDocumentedGrants() {
    assertThat(env.newRole().grant(Role.APPLICATION).privileges()).containsExactlyElementsOf(sorted(
        "schema:USAGE",
        cols("outbox", "INSERT", "message_id", "topic", "shard", "message_key", "type", "payload", "headers"),
        cols("outbox", "SELECT", "id", "message_id", "topic", "published_at"),
        "topic:SELECT"));
    assertThat(env.newRole().grant(Role.RELAY).privileges()).containsExactlyElementsOf(sorted(
        "schema:USAGE", "outbox:SELECT", "outbox:DELETE",
        cols("outbox", "UPDATE", "stream_ms", "stream_seq", "published_at"),
        cols("outbox_purged", "INSERT", "topic", "first_id", "last_id", "first_created_at", "last_created_at", "rows"),
        cols("outbox_purged", "SELECT", "rows"),
        "relay_lease:SELECT",
        cols("relay_lease", "INSERT", "topic", "shard", "key_prefix"),
        cols("relay_lease", "UPDATE", "owner", "epoch", "expires_at", "last_ms", "last_seq", "batch_ids", "batch_ms",
            "batch_seq", "watermark_ms", "watermark_seq", "entries_added", "updated_at", "paused_at", "paused_reason"),
        cols("relay_member", "SELECT", "owner", "heartbeat_at"),
        cols("relay_member", "INSERT", "owner"),
        cols("relay_member", "UPDATE", "heartbeat_at"),
        "relay_member:DELETE", "topic:SELECT", "topic:INSERT"));
    assertThat(env.newRole().grant(Role.CONSUMER).privileges()).containsExactlyElementsOf(sorted(
        "schema:USAGE", "inbox:SELECT", "inbox:DELETE",
        cols("inbox", "INSERT", "consumer_group", "message_id", "stream_id", "outcome"),
        cols("inbox", "UPDATE", "outcome", "processed_at", "stream_id"),
        "dead_letter:SELECT",
        cols("dead_letter", "INSERT", "consumer_group", "message_id", "topic", "stream_key", "stream_id",
            "outbox_id", "message_key", "type", "headers", "payload", "created_at", "deliveries", "error"),
        cols("dead_letter", "UPDATE", "status", "retried_at", "retry_requested_at", "retry_failed_at",
            "retry_error"),
        "outbox:SELECT", "outbox_purged:SELECT", "topic:SELECT", "topic:INSERT", "replay_request:SELECT",
        cols("replay_request", "UPDATE", "finished_at", "handled", "duplicates", "failed"),
        "consumer_lease:SELECT", "consumer_lease:INSERT", "consumer_lease:UPDATE", "consumer_lease:DELETE",
        "consumer_member:SELECT", "consumer_member:INSERT", "consumer_member:UPDATE", "consumer_member:DELETE"));
    assertThat(env.newRole().grant(Role.OPERATOR).privileges()).containsExactlyElementsOf(sorted(
        "schema:USAGE",
        cols("outbox", "SELECT", "id", "message_id", "topic", "shard", "created_at", "published_at"),
        "outbox_purged:SELECT",
        cols("relay_lease", "SELECT", "topic", "shard", "owner", "epoch", "key_prefix", "expires_at", "paused_at",
            "paused_reason"),
        cols("relay_lease", "UPDATE", "paused_at", "paused_reason"),
        "dead_letter:SELECT", "dead_letter:DELETE",
        cols("dead_letter", "UPDATE", "status", "retried_at", "retry_requested_at"),
        "inbox:SELECT", "inbox:DELETE",
        cols("inbox", "INSERT", "consumer_group", "message_id", "stream_id", "outcome"),
        cols("inbox", "UPDATE", "outcome", "processed_at", "stream_id"),
        "topic:SELECT", "replay_request:SELECT",
        cols("replay_request", "INSERT", "consumer_group", "topic", "appended_from", "appended_to"),
        "consumer_lease:SELECT", cols("consumer_lease", "UPDATE", "resume_requested"), "consumer_member:SELECT"));
  }

  @Test
  void roleNamesAreValidatedAndQuoted() throws SQLException {
    for (String bad : new String[] {"a\"b", "x; DROP TABLE outbox", "1abc", "", "public", "PUBLIC", "pg_monitor",
        "a".repeat(64), "caf\u00e9"}) {
      assertThatThrownBy(() -> HandoffGrants.sql(Role.RELAY, "handoff", bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("role name");
    }
    assertThatThrownBy(() -> HandoffGrants.sql(Role.RELAY, "handoff", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was null");
    assertThatThrownBy(() -> HandoffGrants.sql(Role.RELAY, "Bad-Schema", "svc"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("schema must match");
    assertThat(HandoffGrants.sql(Role.OPERATOR, "handoff", "Ops_Team"))
        .contains("GRANT USAGE ON SCHEMA \"handoff\" TO \"Ops_Team\";");
    assertThat(Role.parse(" Relay ")).isEqualTo(Role.RELAY);
    assertThatThrownBy(() -> Role.parse("admin")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("role must be one of application, relay, consumer, operator, was 'admin'");

    // A role that does not exist: nothing is granted, and the message names role, schema and statement.
    assertThatThrownBy(() -> HandoffGrants.apply(env.dataSource(), Role.RELAY, env.schema(), "t_no_such_role"))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("granting the relay privileges on schema '" + env.schema()
            + "' to role 't_no_such_role' failed at: GRANT USAGE ON SCHEMA");
  }

  @Test
  void theApplicationAppendsWithExactlyItsGrantsAndIsRefusedTheRest() throws SQLException {
    DatabaseRole app = env.newRole().grant(Role.APPLICATION);
    DataSource db = app.newDataSource(2);
    // A capacity policy makes the append count the topic's unpublished rows first.
    Outbox outbox = Outbox.builder().schema(env.schema())
        .topic(TopicConfig.of("orders").withShards(2).withCapacity(CapacityPolicy.reject(100))).build();
    List<AppendedMessage> appended = new ArrayList<>();
    try (Connection tx = db.getConnection()) {
      tx.setAutoCommit(false);
      appended.add(outbox.append(tx, Message.builder("orders", "order.placed").key("k").payload("one").build()));
      appended.addAll(outbox.appendAll(tx, RelayTestSupport.unkeyed("orders", 9)));
      tx.commit();
    }
    assertThat(appended).hasSize(10);
    for (AppendedMessage m : appended) {
      assertThat(env.queryLong("SELECT id FROM outbox WHERE message_id = ?", m.messageId())).isEqualTo(m.outboxId());
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isEqualTo(10);

    assertRefused(db, "SELECT payload FROM outbox");
    assertRefused(db, "UPDATE outbox SET published_at = now()");
    assertRefused(db, "DELETE FROM outbox");
    assertRefused(db, "INSERT INTO relay_lease (topic, shard) VALUES ('orders', 0)");
    assertRefused(db, "SELECT count(*) FROM inbox");
    assertRefused(db, "INSERT INTO outbox (message_id, topic, shard, type, payload, stream_ms, stream_seq)"
        + " VALUES (gen_random_uuid(), 'orders', 0, 't', '\\x00', 1, 1)");

    // The read-back is needed: without SELECT on the returned columns the append itself is refused.
    app.execute("REVOKE SELECT (id, message_id) ON " + env.schema() + ".outbox FROM ROLE");
    try (Connection tx = db.getConnection()) {
      tx.setAutoCommit(false);
      assertThatThrownBy(() -> outbox.appendAll(tx, RelayTestSupport.unkeyed("orders", 1)))
          .isInstanceOf(OutboxWriteException.class)
          .hasRootCauseMessage("ERROR: permission denied for table outbox");
      tx.rollback();
    }
  }

  @Test
  void aStartedRelayPublishesToStreamsAndPurgesUnderItsRole() throws SQLException {
    DataSource appDb = env.newRole().grant(Role.APPLICATION).newDataSource(2);
    DatabaseRole relayRole = env.newRole().grant(Role.RELAY);
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("orders").withShards(2)).build();
    DataSource relayDb = relayRole.newDataSource(4);
    try (Relay relay = relay(relayDb, "orders").build()) {
      relay.start(); // LISTEN, lease renewal and membership heartbeat on their own threads, as this role
      append(appDb, outbox, "orders", 30);
      await().atMost(Duration.ofSeconds(20)).until(() -> RelayTestSupport.unpublished(env) == 0);
      assertThat(env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "orders", 0))
          + env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "orders", 1))).isEqualTo(30);
      await().atMost(Duration.ofSeconds(20))
          .until(() -> env.queryLong("SELECT count(*) FROM relay_member") == 1);
    }
    // Closed: it left the membership and released its leases.
    assertThat(env.queryLong("SELECT count(*) FROM relay_member")).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM relay_lease WHERE owner IS NOT NULL")).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM relay_lease")).isEqualTo(2);

    // Redis lost both streams (and their bookkeeping): the relay publishes the retained rows again.
    String key0 = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    String key1 = StreamFormat.streamKey(env.keyPrefix(), "orders", 1);
    env.redis().del(key0, key0 + ":relay", key1, key1 + ":relay");
    AtomicLong republished = new AtomicLong();
    try (Relay relay = relay(relayDb, "orders").listener(new RelayListener() {
      @Override
      public void streamLost(ShardId shard, long rows) {
        republished.addAndGet(rows);
      }
    }).build()) {
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        relay.relayOnce();
        return RelayTestSupport.unpublished(env) == 0 && env.redis().xlen(key0) + env.redis().xlen(key1) == 30;
      });
      assertThat(republished.get()).isEqualTo(30);
    }

    env.execute("UPDATE outbox SET published_at = now() - interval '8 days' WHERE id IN"
        + " (SELECT id FROM outbox ORDER BY id LIMIT 20)");
    try (Relay relay = relay(relayDb, "orders").outboxRetention(Duration.ofDays(7)).build()) {
      relay.relayOnce();
      RetentionReport report = relay.maintainOnce();
      assertThat(report.purged()).isEqualTo(20);
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox")).isEqualTo(10);
    assertThat(env.queryLong("SELECT coalesce(sum(rows), 0) FROM outbox_purged")).isEqualTo(20);

    assertRefused(relayDb, "INSERT INTO outbox (message_id, topic, shard, type, payload)"
        + " VALUES (gen_random_uuid(), 'orders', 0, 't', '\\x00')");
    assertRefused(relayDb, "UPDATE outbox SET payload = '\\x00'");
    assertRefused(relayDb, "DELETE FROM relay_lease");
    assertRefused(relayDb, "SELECT count(*) FROM inbox");
    assertRefused(relayDb, "SELECT count(*) FROM dead_letter");
  }

  @Test
  void theRelayPublishesToListsUnderItsRole() throws SQLException {
    DataSource appDb = env.newRole().grant(Role.APPLICATION).newDataSource(2);
    DataSource relayDb = env.newRole().grant(Role.RELAY).newDataSource(2);
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    String list = ListFormat.listKey(env.keyPrefix(), "jobs", 0);
    env.redis().del(list, ListFormat.relayKey(list), ListFormat.consumersKey(list));
    try (Relay relay = relay(relayDb, "jobs").listTransport(100).build()) {
      append(appDb, outbox, "jobs", 25);
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        relay.relayOnce();
        return RelayTestSupport.unpublished(env) == 0;
      });
      assertThat(env.redis().llen(list)).isEqualTo(25);
      assertThat(relay.relayOnce().published()).isZero();
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")).isEqualTo(25);
  }

  @Test
  void aRelayWithoutItsGrantsFailsNamingTheTableAndPublishesNothing() throws SQLException {
    DataSource appDb = env.newRole().grant(Role.APPLICATION).newDataSource(2);
    append(appDb, Outbox.builder().schema(env.schema()).build(), "jobs", 3);
    try (Relay relay = relay(appDb, "jobs").build()) {
      assertThatThrownBy(relay::relayOnce).hasMessageContaining("permission denied for table relay_lease")
          .hasRootCauseInstanceOf(SQLException.class);
    }
    assertThat(RelayTestSupport.unpublished(env)).isEqualTo(3);
  }

  private RelayBuilder relay(DataSource db, String topic) {
    return Relay.builder(db, env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic).withShards("orders".equals(topic) ? 2 : 1))
        .idlePollInterval(Duration.ofMillis(100));
  }

  private static void append(DataSource db, Outbox outbox, String topic, int n) throws SQLException {
    try (Connection tx = db.getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, RelayTestSupport.unkeyed(topic, n));
      tx.commit();
    }
  }

  /** The statement fails with PostgreSQL's insufficient_privilege (42501). */
  static void assertRefused(DataSource db, String sql) {
    assertThatThrownBy(() -> {
      try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
        s.execute(sql);
      }
    }).as(sql).isInstanceOfSatisfying(SQLException.class,
        e -> assertThat(e.getSQLState()).as(sql + ": " + e.getMessage()).isEqualTo("42501"));
  }

  private static String cols(String table, String privilege, String... columns) {
    List<String> out = new ArrayList<>();
    for (String c : columns) {
      out.add(table + "." + c + ":" + privilege);
    }
    return String.join("\n", out);
  }

  private static List<String> sorted(String... entries) {
    TreeSet<String> all = new TreeSet<>();
    for (String e : entries) {
      all.addAll(List.of(e.split("\n")));
    }
    return List.copyOf(all);
  }
}
