package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The sample's {@code pay} through PgBouncer in transaction pooling with the URL as a user would write it: it wrote
 * 100 payments per transaction on a pooled connection and failed with {@code prepared statement "S_1" already
 * exists}; the command-line pools now default to {@code prepareThreshold=0}.
 */
@HandoffTest
class LedgerCliThroughPgBouncerTest {

  private final TestEnvironment env;

  LedgerCliThroughPgBouncerTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void payWritesEveryPaymentThroughTransactionPoolingWithAPlainUrl() throws InterruptedException {
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource others = pgbouncer.newDataSource(3, "prepareThreshold", "0")) {
      // Other clients of the pool take server sessions meanwhile, as an application's do: alone, pay's connection
      // would keep getting the same server session back and its named statements would happen to be there.
      AtomicBoolean running = new AtomicBoolean(true);
      List<Thread> clients = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Thread t = new Thread(() -> {
          while (running.get()) {
            try (Connection c = others.getConnection(); Statement s = c.createStatement()) {
              s.execute("SELECT pg_sleep(0.002)");
            } catch (SQLException e) {
              throw new IllegalStateException(e);
            }
          }
        }, "other-client-" + i);
        t.start();
        clients.add(t);
      }
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), "pay", "--count", "3000",
          "--jdbc-url", pgbouncer.jdbcUrl(), "--redis-url", env.redisUri().toString(),
          "--schema", env.schema(), "--key-prefix", env.keyPrefix());
      running.set(false);
      for (Thread t : clients) {
        t.join(10_000);
      }

      assertThat(exit).as("exit; out %s; err %s", out, err).isZero();
      assertThat(env.queryLong("SELECT count(*) FROM payment")).isEqualTo(3_000);
      assertThat(env.queryLong("SELECT count(*) FROM outbox")).isEqualTo(3_000);
      assertThat(pgbouncer.log()).doesNotContain("prepared statement");
    }
  }
}
