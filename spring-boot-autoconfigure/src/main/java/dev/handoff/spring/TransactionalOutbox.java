package dev.handoff.spring;

import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The outbox of a Spring application: appends join the Spring transaction running on the calling thread, on the
 * application's {@code DataSource}, so that a message is published if and only if that transaction commits.
 *
 * <pre>
 * &#64;Transactional
 * public void placeOrder(Order order) {
 *   orders.save(order);
 *   outbox.append(Message.builder("orders", "order-placed").key(order.id()).payload(json).build());
 * }
 * </pre>
 *
 * <p>Thread-safe.
 */
public final class TransactionalOutbox {

  private final Outbox outbox;
  private final DataSource dataSource;

  private TransactionalOutbox(Outbox outbox, DataSource dataSource) {
    this.outbox = outbox;
    this.dataSource = dataSource;
  }

  /**
   * The outbox of {@code outbox}'s settings, appending in Spring transactions on {@code dataSource}. The starter
   * defines one as a bean; this is for an application that wires Spring without Boot.
   */
  public static TransactionalOutbox of(Outbox outbox, DataSource dataSource) {
    return new TransactionalOutbox(Objects.requireNonNull(outbox, "outbox"),
        Objects.requireNonNull(dataSource, "dataSource"));
  }

  /**
   * Appends one message in the current transaction.
   *
   * @throws IllegalTransactionStateException if no Spring transaction runs on the application's {@code DataSource}
   *     on this thread
   * @throws dev.handoff.core.InvalidMessageException if the message is invalid (the field is named)
   * @throws dev.handoff.outbox.OutboxWriteException if the insert failed
   */
  public AppendedMessage append(Message message) {
    return outbox.append(DataSourceUtils.getConnection(transactional(message.topic())), message);
  }

  /** Appends several messages in the current transaction, in order; see {@link #append}. */
  public List<AppendedMessage> appendAll(List<Message> messages) {
    return outbox.appendAll(DataSourceUtils.getConnection(transactional(
        messages.isEmpty() ? "" : messages.get(0).topic())), messages);
  }

  private DataSource transactional(String topic) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || !(TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder)) {
      throw new IllegalTransactionStateException("handoff: an append to topic '" + topic + "' needs a Spring"
          + " transaction on the application's DataSource, and none runs on this thread; call it from a"
          + " @Transactional method, so that the message is published only if the transaction commits");
    }
    return dataSource;
  }
}
