package dev.handoff.benchmarks.ledger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Connections;
import dev.handoff.ledger.LedgerException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

/**
 * The bench's connection pool, set up the way an application's is, and full before the first run.
 *
 * <p>The driver's defaults are kept, {@code prepareThreshold} above all: an application's pool (HikariCP under
 * Spring Boot, say) leaves it at 5, so a statement that a session runs again and again is parsed and planned once.
 * The operator tools' pools turn it off so that they work behind any pooler; a bench with that setting measured every
 * producer statement parsed and planned at each execution, which costs a one-row transaction about a third of its
 * throughput on this kind of machine, the raw pipeline's and handoff's alike (pgbench, 32 clients, durable: about
 * 2,900 against 4,900-6,000 transactions a second for the payment and a plain outbox row).
 *
 * <p>Every connection is opened before the first run: a pool that grows on demand would open its connections during
 * the first end-to-end run, which is handoff's, and not in the raw pipeline's that follows it.
 */
public final class BenchPool {

  private static final long FILL_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

  private BenchPool() {}

  /** Opens a pool of {@code size} connections to {@code jdbcUrl} and returns once all are open. */
  public static HikariDataSource open(String jdbcUrl, int size, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(size);
    config.setPoolName(name);
    config.setConnectionTimeout(30_000);
    HikariDataSource pool = new HikariDataSource(config);
    try (Connection c = pool.getConnection()) {
      c.isValid(5);
      long deadline = System.nanoTime() + FILL_TIMEOUT_NANOS;
      while (pool.getHikariPoolMXBean().getTotalConnections() < size) {
        if (System.nanoTime() > deadline) {
          throw new LedgerException("the bench's pool opened " + pool.getHikariPoolMXBean().getTotalConnections()
              + " of its " + size + " connections to " + Connections.mask(jdbcUrl) + " within 60 s");
        }
        BenchThreads.pause(20);
      }
      return pool;
    } catch (SQLException | RuntimeException e) {
      pool.close();
      if (e instanceof LedgerException le) {
        throw le;
      }
      throw new LedgerException("cannot connect to PostgreSQL at " + Connections.mask(jdbcUrl) + ": "
          + e.getMessage(), e);
    }
  }
}
