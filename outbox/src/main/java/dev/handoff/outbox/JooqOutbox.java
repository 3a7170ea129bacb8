package dev.handoff.outbox;

import java.util.List;
import java.util.Objects;
import org.jooq.DSLContext;

/**
 * The {@link Outbox} for jOOQ users: appends in the transaction a {@link DSLContext} is running, for example inside
 * {@code dsl.transaction(cfg -> JooqOutbox.of(outbox).append(cfg.dsl(), message))}. It does exactly what
 * {@link Outbox#append(java.sql.Connection, Message)} does on that transaction's connection, with the same
 * guarantees: it writes in the caller's transaction, never commits, and refuses an auto-commit connection.
 *
 * <p>jOOQ is an optional dependency of handoff: only code that uses this class needs it on the class path.
 * Immutable and thread-safe as the outbox it wraps.
 */
public final class JooqOutbox {

  private final Outbox outbox;

  private JooqOutbox(Outbox outbox) {
    this.outbox = outbox;
  }

  /** The jOOQ view of {@code outbox}. */
  public static JooqOutbox of(Outbox outbox) {
    return new JooqOutbox(Objects.requireNonNull(outbox, "outbox"));
  }

  /** Appends one message in the transaction {@code tx} is running; see {@link Outbox#append}. */
  public AppendedMessage append(DSLContext tx, Message message) {
    return tx.connectionResult(connection -> outbox.append(connection, message));
  }

  /** Appends messages in the transaction {@code tx} is running, in one statement; see {@link Outbox#appendAll}. */
  public List<AppendedMessage> appendAll(DSLContext tx, List<Message> messages) {
    return tx.connectionResult(connection -> outbox.appendAll(connection, messages));
  }
}
