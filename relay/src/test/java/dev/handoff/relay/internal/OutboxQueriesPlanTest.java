package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Guards the relay's mark statement against the plan that made it O(backlog) per batch: in steady state the
 * statistics say almost no row is unpublished, so a plan that reads the unpublished index looks free; during a
 * backlog it reads every unpublished row for each batch of 1,000. The mark and the assignment are PL/pgSQL functions
 * (migration V9) that keep their plans per server session, generic once no costlier: both kinds of plan are checked.
 */
@HandoffTest
class OutboxQueriesPlanTest {

  private final TestEnvironment env;

  OutboxQueriesPlanTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void empty() {
    env.execute("TRUNCATE outbox");
  }

  @Test
  void markingABatchLooksUpEachRowEvenWhenStatisticsSayNothingIsUnpublished() throws SQLException {
    steadyStateThenABacklog();
    String mark = functionQuery("relay_mark_batches");
    String arguments = "'{payments}', '{0}', '{1}', '{1000}', '{false}', 'relay-a', %s, %s, %s, %s";
    String literalArrays = literalBatch(20_001);

    String generic = plan(mark, String.format(arguments, "'{1,1}'", "'{20001,20002}'", "'{1,1}'", "'{1,2}'"), true);
    String custom = plan(mark, String.format(arguments, literalBatch(1).replaceAll("\\d+", "1"), literalArrays,
        literalArrays, literalArrays), false);
    // The join the statement used before: its plan reads the unpublished index whole (or rescans the ids per row).
    String joined = plan("UPDATE outbox o SET published_at = now(), stream_ms = u.ms, stream_seq = u.seq"
        + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq)"
        + " WHERE o.id = u.id AND o.published_at IS NULL", "'{20001,20002}', '{1,1}', '{1,2}'", true);

    assertThat(joined).as("the hazard this guards against").contains("Hash Join");
    for (String plan : new String[] {generic, custom}) {
      // The few lease rows and the statement's own arrays may be scanned and hashed; the outbox is only ever read by
      // one bounded lookup per id, then by ctid.
      assertThat(outboxAccess(plan)).as(plan).containsExactly(
          "Update on outbox o", "Index Scan using outbox_unpublished_idx on outbox i", "Tid Scan on outbox o");
      assertThat(plan).contains("Index Cond: (((topic)::text = ", "AND (id = u.id))");
    }
  }

  @Test
  void theCheckForRowsLooksUpEachShardInTheUnpublishedIndexWithAGenericPlanAsWithACustomOne() throws SQLException {
    // Statistics from the steady state say almost no row is unpublished; with a backlog the check must still look
    // each shard up in the index, not read the index through.
    steadyStateThenABacklog();
    String check = PendingWork.sql(env.schema());
    String arguments = "'{payments,payments,payments,payments}', '{0,1,2,3}'";

    for (boolean generic : new boolean[] {true, false}) {
      String plan = plan(check, arguments, generic);
      assertThat(outboxAccess(plan)).as(plan).containsExactly("Index Scan using outbox_unpublished_idx on outbox o");
      assertThat(plan)
          .containsPattern("Index Cond: \\(\\(\\(topic\\)::text = s\\.topic\\) AND \\(shard = s\\.shard\\)\\)");
    }
  }

  @Test
  void assigningABatchReadsTheUnpublishedIndexInIdOrderWithAGenericPlanAsWithACustomOne() throws SQLException {
    // The function keeps a generic plan once it is no costlier than the custom ones: it must read as they do.
    steadyStateThenABacklog();
    String assign = functionQuery("relay_assign_batches");
    String arguments = "'{payments,payments}', '{0,1}', '{1,1}', '{1000,1000}', 'relay-a', 1048576";

    for (boolean generic : new boolean[] {true, false}) {
      String plan = plan(assign, arguments, generic);
      assertThat(outboxAccess(plan)).as(plan)
          .containsExactly("Index Scan using outbox_unpublished_idx on outbox x");
      assertThat(plan).containsPattern("Index Scan using outbox_unpublished_idx on outbox x[^\\n]*\\n\\s*"
          + "Index Cond: \\(\\(\\(topic\\)::text = \\(b\\w*\\.topic\\)::text\\) AND \\(shard = b\\w*\\.shard\\)\\)");
    }
  }

  @Test
  void onAFreshOutboxNeverAnalysedTheGenericPlansAreTheSameIndexLookups() throws SQLException {
    // What a function caches in the first minute of a deployment, before autovacuum's first ANALYZE: a plan made
    // then is kept until the statistics change, so it must not be a scan that grows with the table.
    String fresh = env.schema() + "_fresh";
    try {
      HandoffMigrations.migrate(env.dataSource(), fresh);
      String assign = plan(fresh, functionQuery(fresh, "relay_assign_batches"),
          "'{payments}', '{0}', '{1}', '{1000}', 'relay-a', 1048576", true);
      assertThat(outboxAccess(assign)).as(assign)
          .containsExactly("Index Scan using outbox_unpublished_idx on outbox x");
      String mark = plan(fresh, functionQuery(fresh, "relay_mark_batches"), "'{payments}', '{0}', '{1}', '{1000}',"
          + " '{false}', 'relay-a', '{1,1}', '{1,2}', '{1,1}', '{1,2}'", true);
      assertThat(outboxAccess(mark)).as(mark).containsExactly(
          "Update on outbox o", "Index Scan using outbox_unpublished_idx on outbox i", "Tid Scan on outbox o");
    } finally {
      env.execute("DROP SCHEMA IF EXISTS " + fresh + " CASCADE");
    }
  }

  @Test
  void theCycleFunctionsFindTheirTablesWhateverTheCallersSearchPath() throws SQLException {
    env.execute("TRUNCATE relay_lease",
        "INSERT INTO relay_lease (topic, shard, owner, epoch, expires_at) VALUES ('payments', 0, 'relay-a', 1,"
            + " 'infinity')",
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " VALUES (gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00')");
    long id = env.queryLong("SELECT id FROM outbox");
    try (Connection c = env.dataSource().getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("SET LOCAL search_path = pg_catalog");
      long ms;
      long seq;
      try (ResultSet rs = s.executeQuery("SELECT ord, leased, id, stream_ms, stream_seq FROM " + env.schema()
          + ".relay_assign_batches('{payments}', '{0}', '{1}', '{10}', 'relay-a', 1048576)")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).isEqualTo(1);
        assertThat(rs.getBoolean(2)).as("the lease holds").isTrue();
        assertThat(rs.getLong(3)).as("the one row, assigned").isEqualTo(id);
        ms = rs.getLong(4);
        seq = rs.getLong(5);
        assertThat(rs.next()).isFalse();
      }
      try (ResultSet rs = s.executeQuery("SELECT leased, marked, added_before FROM " + env.schema()
          + ".relay_mark_batches('{payments}', '{0}', '{1}', '{1}', '{true}', 'relay-a', '{1}', '{" + id + "}',"
          + " '{" + ms + "}', '{" + seq + "}')")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).as("the lease holds").isEqualTo(1);
        assertThat(rs.getLong(2)).as("the row marked").isEqualTo(1);
        assertThat(rs.getLong(3)).as("entries added before this mark").isZero();
        assertThat(rs.next()).isFalse();
      }
      c.rollback();
    }
  }

  @Test
  void aPurgeStatementReadsOneRangeOfThePrimaryKeyWhateverTheTableHolds() throws SQLException {
    // 20,000 published rows, none past retention: a statement that searched for rows past retention with a filter
    // and a LIMIT would read all of them each time, and a maintenance run ends with such a statement.
    env.execute("INSERT INTO outbox (message_id, topic, shard, type, payload, stream_ms, stream_seq, published_at)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00', 1, i, now()"
            + " FROM generate_series(1, 20000) i",
        "VACUUM ANALYZE outbox");
    String purge = new OutboxQueries(env.schema()).purgeRangeSql();
    String arguments = "1, 1001, '{payments}', 604800, 604800";

    for (boolean generic : new boolean[] {true, false}) {
      String plan = plan(purge, arguments, generic);
      assertThat(plan).as(plan).doesNotContain("Seq Scan on outbox", "Hash Join", "Hash Semi Join")
          .containsPattern("Index Scan using outbox_pkey on outbox[^\\n]*\\n\\s*Index Cond: \\(\\(id >= ")
          .containsPattern("Index Scan using outbox_pkey on outbox o[^\\n]*\\n\\s*Index Cond: \\(id = ANY ");
    }
    String old = plan("SELECT id FROM outbox WHERE published_at < clock_timestamp() - make_interval(secs => ?)"
        + " AND topic = ANY(?) ORDER BY id LIMIT ?", "604800, '{payments}', 1000", false);
    assertThat(old).as("the hazard this guards against: no bound on the rows read").doesNotContain("Index Cond");
  }

  /** Steady state: 20,000 published rows, analysed; then a backlog of 5,000 the statistics know nothing of. */
  private void steadyStateThenABacklog() {
    env.execute("INSERT INTO outbox (message_id, topic, shard, type, payload, stream_ms, stream_seq, published_at)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00', 1, i, now()"
            + " FROM generate_series(1, 20000) i",
        "VACUUM ANALYZE outbox",
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00' FROM generate_series(1, 5000) i");
  }

  /**
   * The query of the PL/pgSQL function {@code name} of migration V9, which refers to the function's arguments as
   * {@code $1, $2, ...}: the statement whose plans the function caches.
   */
  private String functionQuery(String name) throws SQLException {
    return functionQuery(env.schema(), name);
  }

  private String functionQuery(String schema, String name) throws SQLException {
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n"
            + " ON n.oid = p.pronamespace WHERE n.nspname = ? AND p.proname = ?")) {
      ps.setString(1, schema);
      ps.setString(2, name);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as(name).isTrue();
        Matcher m = Pattern.compile("RETURN QUERY (.*);\\s*END\\s*$", Pattern.DOTALL).matcher(rs.getString(1));
        assertThat(m.find()).as(rs.getString(1)).isTrue();
        return m.group(1);
      }
    }
  }

  /** The plan's nodes that read or write the outbox, without their costs. */
  private static List<String> outboxAccess(String plan) {
    return plan.lines().map(l -> l.replaceAll("^[\\s>-]*", "").replaceAll("\\s+\\(cost=.*", ""))
        .filter(l -> l.matches(".* on outbox( .*)?")).toList();
  }

  /** 1,000 ids from {@code first} on as an array literal, the size of a relay batch. */
  private static String literalBatch(int first) {
    StringBuilder ids = new StringBuilder("'{");
    for (int i = 0; i < 1000; i++) {
      ids.append(i == 0 ? "" : ",").append(first + i);
    }
    return ids.append("}'").toString();
  }

  /**
   * The plan of the JDBC statement {@code sql} with these arguments: the generic plan PostgreSQL would cache after
   * its first executions, or the custom plan made for the arguments.
   */
  private String plan(String sql, String arguments, boolean generic) throws SQLException {
    return plan(env.schema(), sql, arguments, generic);
  }

  /** {@link #plan(String, String, boolean)} on the tables of {@code schema}. */
  private String plan(String schema, String sql, String arguments, boolean generic) throws SQLException {
    AtomicInteger n = new AtomicInteger();
    Matcher m = Pattern.compile("\\?").matcher(sql);
    StringBuilder numbered = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(numbered, "\\$" + n.incrementAndGet());
    }
    m.appendTail(numbered);
    try (Connection c = env.dataSource().getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("SET LOCAL search_path = " + schema);
      s.execute("SET LOCAL plan_cache_mode = " + (generic ? "force_generic_plan" : "force_custom_plan"));
      s.execute("PREPARE probe AS " + numbered);
      StringBuilder plan = new StringBuilder();
      try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE probe(" + arguments + ")")) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      }
      s.execute("DEALLOCATE probe");
      c.rollback();
      return plan.toString();
    }
  }
}
