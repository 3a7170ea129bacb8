package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.ConsumerTransactions;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.core.Ordered;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A consumer's transactions run by the application's {@link PlatformTransactionManager} on its {@link DataSource}, so
 * that what a handler writes through Spring ({@code JdbcTemplate}, jOOQ's Spring-managed {@code DSLContext}, JPA
 * under {@code JpaTransactionManager}, a {@code @Transactional} service that joins) commits with the inbox marker.
 *
 * <p>Each transaction is a new one ({@code REQUIRES_NEW}): handoff's commit is never folded into a caller's. Inside
 * it, a handler may not start a transaction of its own ({@code REQUIRES_NEW}, {@code NOT_SUPPORTED}): that would
 * suspend the batch's transaction and commit apart from the inbox marker, once per delivery. Spring suspends the
 * batch's synchronizations first, and this class refuses there, before the new transaction begins; a handler that
 * swallows the refusal still fails its message at commit.
 *
 * <p>Thread-safe: each transaction is begun and ended on the worker thread that uses it.
 */
final class SpringTransactions implements ConsumerTransactions {

  private static final ThreadLocal<TransactionStatus> CURRENT = new ThreadLocal<>();

  private final PlatformTransactionManager transactionManager;
  private final DataSource dataSource;
  private final String group;

  SpringTransactions(PlatformTransactionManager transactionManager, DataSource dataSource, String group) {
    this.transactionManager = transactionManager;
    this.dataSource = dataSource;
    this.group = group;
  }

  /**
   * Flushes what the framework holds for the transaction of the handler running on this thread (a JPA persistence
   * context), so that a write the database refuses fails the handler call that made it, not the commit.
   */
  static void flushCurrent() {
    TransactionStatus status = CURRENT.get();
    if (status != null) {
      status.flush();
    }
  }

  @Override
  public Transaction begin() throws SQLException {
    DefaultTransactionDefinition definition =
        new DefaultTransactionDefinition(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
    definition.setName("handoff consumer group '" + group + "'");
    TransactionStatus status = transactionManager.getTransaction(definition);
    try {
      Object bound = TransactionSynchronizationManager.getResource(dataSource);
      if (!(bound instanceof ConnectionHolder)) {
        throw new SQLException("handoff: the transaction manager " + transactionManager.getClass().getSimpleName()
            + " does not run its transactions on the DataSource handoff's consumer group '" + group + "' uses;"
            + " give handoff the DataSource the transaction manager manages");
      }
      Connection connection = DataSourceUtils.getConnection(dataSource);
      if (connection.getAutoCommit()) {
        throw new SQLException("handoff: the connection of consumer group '" + group + "''s transaction has"
            + " auto-commit on; its transaction manager does not hold a database transaction open");
      }
      NoNewTransactions guard = new NoNewTransactions(group);
      TransactionSynchronizationManager.registerSynchronization(guard);
      CURRENT.set(status);
      return new SpringTransaction(status, connection, guard);
    } catch (SQLException | RuntimeException e) {
      transactionManager.rollback(status);
      throw e;
    }
  }

  private final class SpringTransaction implements Transaction {
    private final TransactionStatus status;
    private final Connection connection;
    private final NoNewTransactions guard;

    SpringTransaction(TransactionStatus status, Connection connection, NoNewTransactions guard) {
      this.status = status;
      this.connection = connection;
      this.guard = guard;
    }

    @Override
    public Connection connection() {
      return connection;
    }

    @Override
    public void commit() throws SQLException {
      CURRENT.remove();
      if (guard.refusal != null) {
        transactionManager.rollback(status);
        throw new SQLException(guard.refusal.getMessage(), "2D000", guard.refusal);
      }
      transactionManager.commit(status);
    }

    @Override
    public void rollback() {
      CURRENT.remove();
      if (!status.isCompleted()) {
        transactionManager.rollback(status);
      }
    }
  }

  /** Refuses, first of all synchronizations, to let a handler suspend the batch's transaction. */
  private static final class NoNewTransactions implements TransactionSynchronization, Ordered {
    private final String group;
    private IllegalTransactionStateException refusal;

    NoNewTransactions(String group) {
      this.group = group;
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE;
    }

    @Override
    public void suspend() {
      IllegalTransactionStateException e = new IllegalTransactionStateException("handoff: a handler of consumer"
          + " group '" + group + "' started a transaction of its own (REQUIRES_NEW or NOT_SUPPORTED) inside the"
          + " batch's transaction; its writes would commit apart from the inbox marker, once per delivery."
          + " Use the default propagation (REQUIRED) so that they join the batch's transaction");
      if (refusal == null) {
        refusal = e;
      }
      throw e;
    }
  }
}
