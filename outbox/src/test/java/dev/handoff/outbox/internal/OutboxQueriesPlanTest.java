package dev.handoff.outbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  @Test
  void markingABatchNeverReadsTheUnpublishedIndexEvenWhenStatisticsSayItIsEmpty() throws SQLException {
    // Steady state: 20,000 published rows, analysed; then a backlog the statistics know nothing of.
    env.execute("INSERT INTO outbox (message_id, topic, shard, type, payload, stream_ms, stream_seq, published_at)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00', 1, i, now()"
            + " FROM generate_series(1, 20000) i",
        "VACUUM ANALYZE outbox",
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " SELECT gen_random_uuid(), 'payments', 0, 'payment.created', '\\x00' FROM generate_series(1, 5000) i");
    String mark = new OutboxQueries(env.schema()).markPublishedSql();

    String plan = genericPlan(mark, "1000, false, false, false, 'payments', 0, 'relay-a', 1,"
        + " ARRAY[20001, 20002]::bigint[], ARRAY[1, 1]::bigint[], ARRAY[1, 2]::bigint[]");
    String plainPredicate = genericPlan(mark.replace("(o.published_at IS NULL) IS TRUE", "o.published_at IS NULL"),
        "1000, false, false, false, 'payments', 0, 'relay-a', 1,"
            + " ARRAY[20001, 20002]::bigint[], ARRAY[1, 1]::bigint[], ARRAY[1, 2]::bigint[]");

    assertThat(plainPredicate).as("the hazard this guards against (plan of the plain predicate)")
        .contains("outbox_unpublished_idx");
    assertThat(plan).doesNotContain("outbox_unpublished_idx").contains("outbox_pkey");
  }

  /** The plan PostgreSQL would cache for the JDBC statement {@code sql} after its first executions. */
  private String genericPlan(String sql, String arguments) throws SQLException {
    AtomicInteger n = new AtomicInteger();
    Matcher m = Pattern.compile("\\?").matcher(sql);
    StringBuilder numbered = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(numbered, "\\$" + n.incrementAndGet());
    }
    m.appendTail(numbered);
    try (Connection c = env.dataSource().getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.execute("SET LOCAL plan_cache_mode = force_generic_plan");
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
