package dev.handoff.consumer;

import java.sql.Connection;

/**
 * The application's work for one message, done in the database transaction that handoff opened for it.
 *
 * <p>When {@code handle} is called, handoff has just inserted the message's inbox marker on {@code tx}; whatever
 * the handler writes on {@code tx} commits together with that marker, or not at all. The handler must not commit,
 * roll back, close {@code tx} or change its auto-commit mode, and should not keep a reference to it after
 * returning.
 *
 * <p>Delivery semantics: the handler may be called more than once for the same message (after a failure, a crash,
 * or a sibling's failure in the same batch when {@link FailureIsolation#OPTIMISTIC_BATCH} is used), but its
 * effects on {@code tx} are committed at most once per consumer group: the marker's primary key is the fence.
 * Effects outside {@code tx} (HTTP calls, e-mails) get no such guarantee.
 *
 * <p>Throwing marks the message as failed: its transaction work is undone, the stream entry stays pending and is
 * retried after a backoff, and after {@code maxDeliveries} attempts it is dead-lettered with the exception's text.
 */
@FunctionalInterface
public interface MessageHandler {

  void handle(Connection tx, InboundMessage message) throws Exception;
}
