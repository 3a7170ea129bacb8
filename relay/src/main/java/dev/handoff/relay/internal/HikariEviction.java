package dev.handoff.relay.internal;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** HikariCP's own eviction; loaded only when HikariCP is on the class path (it is an optional dependency). */
final class HikariEviction {

  private HikariEviction() {}

  /**
   * Evicts {@code c}, borrowed from {@code source}, and closes its driver connection; true when it did. The caller
   * must not close {@code c} after that: HikariCP has taken it back already, and a second return is refused.
   */
  static boolean evict(DataSource source, Connection c) {
    try {
      if (c.getClass().getName().startsWith("com.zaxxer.hikari") && source.isWrapperFor(HikariDataSource.class)) {
        source.unwrap(HikariDataSource.class).evictConnection(c);
        return true;
      }
    } catch (SQLException | RuntimeException e) {
      // not evicted: the caller falls back to what works with any pool
    }
    return false;
  }
}
