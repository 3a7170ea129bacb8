package dev.handoff.benchmarks.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * {@link CountingDataSource} against PostgreSQL's own count: the same work, through HikariCP as the benchmark has
 * it, counted by the wrapper and by {@code pg_stat_database} of a database that nothing else uses, whose one backend
 * flushes its counters on request ({@code pg_stat_force_next_flush}).
 */
@HandoffTest
class CountingDataSourceTest {

  private final TestEnvironment env;

  CountingDataSourceTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void countsTransactionsAsPostgresDoes() throws Exception {
    String db = "counting_" + env.schema().toLowerCase().replaceAll("[^a-z0-9_]", "_");
    env.execute("CREATE DATABASE " + db);
    long[] before;
    long[] after;
    CountingDataSource counting;
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(env.postgres().jdbcUrl().replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + db));
    if (env.postgres().user() != null) {
      config.setUsername(env.postgres().user());
      config.setPassword(env.postgres().password());
    }
    // One connection, so one backend: the one whose counters are flushed. Every borrow below follows the last within
    // HikariCP's 0.5 s, so the pool sends no validation query in between (which only PostgreSQL would count).
    config.setMaximumPoolSize(1);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      before = databaseCounts(pool);
      counting = new CountingDataSource(pool);
      work(counting);
      after = databaseCounts(pool);
    } finally {
      env.execute("DROP DATABASE " + db);
    }

    // when the work has run: 6 commits and 4 rollbacks, as listed in work()
    assertThat(counting.commits()).isEqualTo(6);
    assertThat(counting.rollbacks()).isEqualTo(4);
    // and PostgreSQL agrees; its delta also holds the first count's own query and the flush request before the last
    assertThat(after[0] - before[0] - 2).as("xact_commit delta less the counting queries")
        .isEqualTo(counting.commits());
    assertThat(after[1] - before[1]).as("xact_rollback delta").isEqualTo(counting.rollbacks());
  }

  /** The relay's and the consumer's ways of using a connection, and the edge cases of the counting rules. */
  private static void work(CountingDataSource ds) throws SQLException {
    try (Connection c = ds.getConnection()) {
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1"); // auto-commit: commit 1
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT ?::int")) {
        ps.setInt(1, 2);
        try (ResultSet rs = ps.executeQuery()) { // commit 2
          rs.next();
        }
      }
      c.setAutoCommit(false);
      c.commit(); // nothing ran: pgjdbc sends nothing
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
        s.execute("SELECT 2");
      }
      c.commit(); // commit 3
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      c.rollback(); // rollback 1
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      c.setAutoCommit(true); // commit 4
      c.setAutoCommit(false);
      Savepoint sp = c.setSavepoint();
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      c.rollback(sp);
      c.commit(); // commit 5
      try (Statement s = c.createStatement()) {
        assertThatThrownBy(() -> s.execute("SELECT 1/0")).isInstanceOf(SQLException.class);
      }
      try {
        c.commit(); // the server turns it into a rollback: rollback 2
      } catch (SQLException expected) {
        // pgjdbc says so
      }
      c.setAutoCommit(true);
      try (Statement s = c.createStatement()) {
        assertThatThrownBy(() -> s.execute("SELECT 1/0")).isInstanceOf(SQLException.class); // rollback 3
        s.addBatch("SELECT 1");
        s.addBatch("SELECT 2");
        s.executeBatch(); // auto-commit: one implicit transaction, commit 6
      }
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
    } // left open: HikariCP rolls it back, rollback 4
  }

  /** This database's {@code xact_commit} and {@code xact_rollback}, after flushing this backend's counters. */
  private static long[] databaseCounts(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_force_next_flush()"); // flushed when the backend goes idle after it
      try (ResultSet rs = s.executeQuery("SELECT xact_commit, xact_rollback FROM pg_stat_database"
          + " WHERE datname = current_database()")) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    }
  }
}
