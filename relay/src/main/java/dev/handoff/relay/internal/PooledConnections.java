package dev.handoff.relay.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives up a pooled connection whose session failed, or whose session holds state that no later borrower may
 * inherit, so that the pool never hands it out again.
 *
 * <p>Work done on the driver's own connection ({@code unwrap(PGConnection.class)}, such as reading notifications)
 * bypasses the pool's proxy, so a failure there is never seen by the pool: closing the connection as usual would
 * return a dead session, and HikariCP hands a connection used in the last 500 ms to the next borrower unchecked.
 */
final class PooledConnections {

  private static final Logger log = LoggerFactory.getLogger(PooledConnections.class);
  private static final boolean HIKARI = present("com.zaxxer.hikari.HikariDataSource");

  private PooledConnections() {}

  /**
   * Ends {@code c}'s server session and takes it out of {@code source}'s pool: HikariCP's {@code evictConnection}
   * where {@code source} is (or wraps) a HikariCP pool; for any other pool, {@link Connection#abort} and then a
   * statement through the pool's proxy, whose connection error is what pools evict on. Never throws.
   */
  static void discard(DataSource source, Connection c) {
    if (HIKARI && HikariEviction.evict(source, c)) {
      return;
    }
    try {
      c.abort(Runnable::run);
    } catch (SQLException | RuntimeException e) {
      log.debug("abort of a failed connection failed", e);
    }
    try (Statement s = c.createStatement()) {
      s.execute("SELECT 1"); // fails on the aborted session, through the pool's proxy
    } catch (SQLException | RuntimeException expected) {
      // the pool has now seen a connection error
    }
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      log.debug("close of a discarded connection failed", e);
    }
  }

  private static boolean present(String className) {
    try {
      Class.forName(className, false, PooledConnections.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
