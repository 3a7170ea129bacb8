package dev.handoff.relay.internal;

import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.SQLException;

/** Several statements of the relay as one transaction, on a connection that is otherwise in auto-commit. */
final class Transactions {

  private Transactions() {}

  /** Statements to run together; they may throw what JDBC throws. */
  interface Work<T> {
    T run() throws SQLException;
  }

  /** Runs {@code work} in one transaction on {@code c}, which is back in auto-commit afterwards, whatever happened. */
  static <T> T inOne(Connection c, Work<T> work) throws SQLException {
    c.setAutoCommit(false);
    T result;
    try {
      result = work.run();
      c.commit();
    } catch (SQLException | RuntimeException | Error e) {
      try {
        c.rollback();
        c.setAutoCommit(true);
      } catch (SQLException cleanupFailed) {
        e.addSuppressed(cleanupFailed); // the connection is broken: the pool discards it
      }
      throw e;
    }
    c.setAutoCommit(true);
    return result;
  }
}
