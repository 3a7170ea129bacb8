package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerTransactions;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The transactions of one settle, retry or replay call, begun and ended in turn on the calling thread: the
 * consumer's own on one borrowed connection, or those of the application ({@link ConsumerTransactions}).
 *
 * <p>Not thread-safe: one per call, closed by the caller.
 */
abstract class BatchTransactions implements AutoCloseable {

  /** The transactions of one call: the application's when it supplies them, otherwise the consumer's own. */
  static BatchTransactions open(DataSource dataSource, ConsumerTransactions hosted) {
    return hosted == null ? new Own(dataSource) : new Hosted(hosted);
  }

  /** Begins the next transaction and returns its connection (auto-commit off). */
  abstract Connection begin() throws SQLException;

  /**
   * Commits what {@link #begin} began, removing the seal of {@code guard} first (null when none was set).
   *
   * @throws SQLException with nothing committed; the caller need not roll back
   */
  abstract void commit(HandlerTransaction guard) throws SQLException;

  /** Rolls back what {@link #begin} began, if anything is open; never throws. */
  abstract void rollback();

  /**
   * Whether {@code cause}, met in the transaction just rolled back, says the connection itself is gone, so that
   * nothing more should be tried in this call.
   */
  abstract boolean broken(Throwable cause);

  /** Whether a savepoint rollback undoes everything a handler did, so that a failed message can be cut out in place. */
  abstract boolean savepointsUndoHandlers();

  @Override
  public abstract void close();

  /** One connection borrowed for the whole call, committed with the seal's removal in one round trip. */
  private static final class Own extends BatchTransactions {
    private final DataSource dataSource;
    private Connection c;

    Own(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @Override
    Connection begin() throws SQLException {
      if (c == null) {
        Connection borrowed = dataSource.getConnection();
        try {
          borrowed.setAutoCommit(false);
        } catch (SQLException e) {
          Jdbc.giveBack(borrowed);
          throw e;
        }
        c = borrowed;
      }
      return c;
    }

    @Override
    void commit(HandlerTransaction guard) throws SQLException {
      try {
        if (guard != null) {
          guard.commit();
        } else {
          c.commit();
        }
      } catch (SQLException | RuntimeException e) {
        Jdbc.rollbackQuietly(c);
        throw e;
      }
    }

    @Override
    void rollback() {
      if (c != null) {
        Jdbc.rollbackQuietly(c);
      }
    }

    @Override
    boolean broken(Throwable cause) {
      return c == null || Jdbc.broken(c, cause);
    }

    @Override
    boolean savepointsUndoHandlers() {
      return true;
    }

    @Override
    public void close() {
      if (c != null) {
        Jdbc.giveBack(c);
        c = null;
      }
    }
  }

  /** The application's transactions, one per {@link #begin}; its connections are its own to give back. */
  private static final class Hosted extends BatchTransactions {
    private final ConsumerTransactions transactions;
    private ConsumerTransactions.Transaction open;

    Hosted(ConsumerTransactions transactions) {
      this.transactions = transactions;
    }

    @Override
    Connection begin() throws SQLException {
      rollback();
      open = transactions.begin();
      return open.connection();
    }

    @Override
    void commit(HandlerTransaction guard) throws SQLException {
      ConsumerTransactions.Transaction t = open;
      try {
        if (guard != null) {
          guard.unseal();
        }
      } catch (SQLException | RuntimeException e) {
        rollback();
        throw e;
      }
      open = null;
      t.commit(); // the application's commit ends the transaction either way
    }

    @Override
    void rollback() {
      ConsumerTransactions.Transaction t = open;
      open = null;
      if (t != null) {
        try {
          t.rollback();
        } catch (SQLException | RuntimeException e) {
          // the application's transaction manager reports it; nothing of the transaction committed
        }
      }
    }

    @Override
    boolean broken(Throwable cause) {
      return Jdbc.hasStateClass(cause, "08");
    }

    @Override
    boolean savepointsUndoHandlers() {
      return false;
    }

    @Override
    public void close() {
      rollback();
    }
  }
}
