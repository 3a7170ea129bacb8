package dev.handoff.outbox;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.InvalidMessageException;
import dev.handoff.outbox.internal.DefaultOutbox;
import java.sql.Connection;
import java.util.List;

/**
 * Appends messages to the outbox table inside the caller's database transaction, so that a message exists if and
 * only if the business change it describes was committed.
 *
 * <p>Guarantees:
 * <ul>
 *   <li>An append runs on the caller's connection, in the caller's transaction. It never commits, never rolls back
 *       and never opens a connection of its own. A connection in auto-commit mode is refused with an
 *       {@link IllegalStateException} before anything is written.
 *   <li>A message is validated (syntax when built; payload and header sizes here) before anything is written; an
 *       invalid one throws {@link InvalidMessageException} naming the field and the limit, and writes nothing.
 *   <li>An append never makes its transaction wait for other appending transactions' commits. It notifies
 *       ({@code pg_notify}) only while its shard's relay sleeps, and PostgreSQL delivers that notification only if
 *       and when the transaction commits; a relay that is awake polls. Each append tries a transaction-scoped
 *       advisory lock, shared, on its shard's wake key (docs/relay.md, "How the relay learns of new rows").
 *   <li>A batch append writes all its messages in one statement (one round trip), or none.
 *   <li>When a topic has a {@link CapacityPolicy}, a refused append writes nothing and throws
 *       {@link OutboxFullException}.
 * </ul>
 *
 * <p>Implementations are thread-safe; one instance serves the whole application.
 */
public interface Outbox {

  /** A builder with the defaults: schema {@code handoff}, 1 MiB payloads, 8 KiB headers, unlimited topics. */
  static OutboxBuilder builder() {
    return new OutboxBuilder();
  }

  /**
   * Appends one message in the transaction of {@code tx}.
   *
   * @throws IllegalStateException if {@code tx} is in auto-commit mode
   * @throws InvalidMessageException if the payload or headers exceed their limits
   * @throws OutboxFullException if the topic's capacity policy refuses the append
   * @throws OutboxWriteException if the database refuses the insert
   */
  AppendedMessage append(Connection tx, Message message);

  /**
   * Appends messages in the transaction of {@code tx}, in list order, in one statement. All are validated first;
   * one invalid message refuses the whole batch.
   *
   * @return one result per message, in the same order
   */
  List<AppendedMessage> appendAll(Connection tx, List<Message> messages);

  /** The immutable configuration this outbox was built with. */
  OutboxConfig config();

  /** Creates the default implementation; used by {@link OutboxBuilder#build()}. */
  static Outbox create(OutboxConfig config) {
    return new DefaultOutbox(config);
  }
}
