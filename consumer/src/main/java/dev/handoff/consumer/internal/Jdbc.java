package dev.handoff.consumer.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Set;

/** How the consumer ends a transaction and hands a connection back, whatever state the connection is in. */
final class Jdbc {

  private Jdbc() {}

  /**
   * Ends whatever transaction is still open and hands the connection back with auto-commit on, as it was borrowed:
   * a pool that does not reset it (a plain DataSource, unlike HikariCP) would give the next borrower a connection
   * whose statements silently wait for a commit that never comes.
   */
  static void giveBack(Connection c) {
    rollbackQuietly(c);
    try {
      if (!c.isClosed()) {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      // the connection is broken; closing it is all that is left
    }
    try {
      c.close();
    } catch (SQLException e) {
      // nothing more to do
    }
  }

  static void rollbackQuietly(Connection c) {
    try {
      if (!c.isClosed()) {
        c.rollback();
      }
    } catch (SQLException e) {
      // the connection is broken; closing it discards the transaction
    }
  }

  /** True when the error or the connection says the connection itself is gone (SQLSTATE class 08, or invalid). */
  static boolean broken(Connection c, Throwable e) {
    if (hasStateClass(e, "08")) {
      return true;
    }
    try {
      return c.isClosed() || !c.isValid(2);
    } catch (SQLException ex) {
      return true;
    }
  }

  /** True when the error says the transaction was aborted by an earlier failed statement (SQLSTATE 25P02). */
  static boolean transactionAborted(Throwable e) {
    return hasState(e, "25P02");
  }

  /** True when {@code e} or one of its causes is an {@link SQLException} of SQLSTATE {@code state}. */
  static boolean hasState(Throwable e, String state) {
    return hasState(e, Set.of(state));
  }

  /** True when {@code e} or one of its causes is an {@link SQLException} of one of the SQLSTATEs {@code states}. */
  static boolean hasState(Throwable e, Set<String> states) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      // Set.of's contains refuses null, and a driver may leave the SQLSTATE out.
      if (t instanceof SQLException s && s.getSQLState() != null && states.contains(s.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code e} or a cause is an {@link SQLException} whose SQLSTATE is of class {@code stateClass}. */
  static boolean hasStateClass(Throwable e, String stateClass) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null && s.getSQLState().startsWith(stateClass)) {
        return true;
      }
    }
    return false;
  }
}
