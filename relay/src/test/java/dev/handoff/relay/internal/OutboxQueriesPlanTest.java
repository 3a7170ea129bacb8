package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
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
 * backlog it reads every unpublished row for each batch of 1,000.
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
    // Steady state: 20,000 published rows, analysed; then a backlog of 5,000 the statistics know nothing of.
    env.execute("INSERT INTO outbox (message_id, topic, shard, type, payload, stream_ms, stream_seq, published_at)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00', 1, i, now()"
            + " FROM generate_series(1, 20000) i",
        "VACUUM ANALYZE outbox",
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00' FROM generate_series(1, 5000) i");
    String mark = new OutboxQueries(env.schema()).markPublishedSql();
    String arguments = "'{payments}', '{0}', '{1}', '{1000}', '{false}', 'relay-a', 'relay-a', 'relay-a',"
        + " %s, %s, %s, %s";
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
    AtomicInteger n = new AtomicInteger();
    Matcher m = Pattern.compile("\\?").matcher(sql);
    StringBuilder numbered = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(numbered, "\\$" + n.incrementAndGet());
    }
    m.appendTail(numbered);
    try (Connection c = env.dataSource().getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
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
