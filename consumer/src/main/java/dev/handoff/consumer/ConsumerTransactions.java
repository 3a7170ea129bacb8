package dev.handoff.consumer;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Who begins and ends the database transactions in which a consumer runs its handlers: those of a batch, of a
 * dead-letter retry and of a replay. By default the consumer runs them itself on connections of its
 * {@code DataSource}. An application whose data access is managed by a framework supplies its own, so that whatever
 * a handler writes through that framework (Spring's {@code JdbcTemplate}, JPA, a {@code @Transactional} service)
 * joins the transaction of the inbox marker; the Spring Boot starter supplies one over the application's
 * {@code PlatformTransactionManager}.
 *
 * <p><b>Contract.</b> {@link #begin} opens a new transaction, never one the calling thread already holds, on the
 * consumer's database; handoff ends each with exactly one of {@link Transaction#commit} or
 * {@link Transaction#rollback}, on the thread that began it. The handler's writes, the inbox marker and the dead
 * letters of a batch commit together or not at all: a transaction that cannot guarantee that (a connection of another
 * database, auto-commit on) must fail in {@code begin}. A commit that fails must leave nothing committed and throw;
 * handoff then treats the batch as failed and never acknowledges it.
 *
 * <p>With hosted transactions, failure isolation is always {@link FailureIsolation#OPTIMISTIC_BATCH}: a failed
 * message's transaction is rolled back whole and the rest run again without it, because a savepoint rollback would
 * not undo what a framework holds outside the database (a JPA persistence context).
 *
 * <p>Implementations must be thread-safe: each worker begins its own transactions.
 */
public interface ConsumerTransactions {

  /**
   * Begins a transaction.
   *
   * @throws SQLException or a runtime exception if none can be begun; the consumer retries later, as after any
   *     failure of the database
   */
  Transaction begin() throws SQLException;

  /** One transaction begun by {@link #begin}. Used by one thread. */
  interface Transaction {

    /**
     * The transaction's connection, auto-commit off. handoff runs its own statements on it and hands it to the
     * handler behind a guard; it never closes or commits it directly.
     */
    Connection connection();

    /** Commits the transaction, or throws with nothing committed. */
    void commit() throws SQLException;

    /** Rolls the transaction back; called at most once, and never after {@link #commit}. */
    void rollback() throws SQLException;
  }
}
