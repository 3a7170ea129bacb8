package dev.handoff.consumer;

import dev.handoff.consumer.status.GroupStatus;
import java.sql.Connection;

/**
 * The application's work for one message, done in the database transaction that handoff opened for it.
 *
 * <p>When {@code handle} is called, handoff has just inserted the message's inbox marker on {@code tx}; whatever
 * the handler writes on {@code tx} commits together with that marker, or not at all. The transaction is handoff's to
 * end, and this is enforced: {@code tx} refuses {@code commit()}, {@code rollback()}, {@code setAutoCommit(true)},
 * {@code close()} and {@code abort}, with an {@link java.sql.SQLException} of SQLSTATE {@code 2D000} that names the
 * rule; a {@code COMMIT} or {@code ROLLBACK} run as SQL, or a commit on the connection under {@code tx}, fails in
 * PostgreSQL and rolls the whole transaction back (a sealed batch, see docs/guarantees.md). Either way nothing of
 * the message commits, its marker never says processed, and the message fails, even if the handler swallowed the
 * exception: retried, then dead-lettered with that text. The handler's own savepoints work as usual. Writes through
 * any other connection (the application's {@code DataSource}) commit on their own, apart from the marker, and again
 * on every redelivery: the test kit's strict mode catches them. An application whose data access goes through a
 * framework's transactions ({@code JdbcTemplate}, JPA) lets that framework run the consumer's transactions instead
 * ({@link ConsumerBuilder#transactions}; the Spring Boot starter does), so that those writes join {@code tx}'s
 * transaction. The handler should not keep a reference to {@code tx} after returning.
 *
 * <p>Delivery semantics: the handler may be called more than once for the same message (after a failure, a crash,
 * or a sibling's failure in the same batch when {@link FailureIsolation#OPTIMISTIC_BATCH} is used), but its
 * effects on {@code tx} are committed at most once per consumer group: the marker's primary key is the fence.
 * Effects outside {@code tx} (HTTP calls, e-mails) get no such guarantee.
 *
 * <p>Logging: while it runs, the SLF4J MDC holds {@code traceparent} (when the producer's message carried one),
 * {@code handoff.message_id}, {@code handoff.topic}, {@code handoff.group}, {@code handoff.source} (the stream or
 * list key) and {@code handoff.entry_id}, so a pattern such as {@code %X{traceparent}} ties the handler's lines to
 * the producer's trace. They are put back as they were when it returns. A {@link BatchMessageHandler} sees only the
 * topic and the group.
 *
 * <p>What a throw costs depends on whose fault it is, read from the exception and its causes:
 * <ul>
 *   <li><b>The message's</b> (anything not listed below, a constraint violation included): the transaction work
 *       is undone, the delivery counts, the message is retried after a backoff, and after {@code maxDeliveries}
 *       attempts it is dead-lettered with the exception's text.
 *   <li><b>The environment's</b>: SQLSTATE class 08 (connection), 42501 (privilege), 42P01 and 42703 (undefined
 *       table or column), class 53 (resources), 57P01 to 57P03 (shutdown), 25006 (read-only), a Redis connection
 *       or permission failure, or a {@link RetryLaterException}. The batch is rolled back, <b>no delivery counts
 *       and nothing is dead-lettered</b>; the worker holds the batch, pauses with backoff (one WARN per pause,
 *       {@link ConsumerListener#paused}, {@link GroupStatus#paused}) and settles it again once an attempt goes
 *       through.
 *   <li><b>A conflict</b>: 40001 (serialization failure) and 40P01 (deadlock). The batch's transaction is run
 *       again at once, up to 10 times, without counting; past that it is paused as above.
 * </ul>
 */
@FunctionalInterface
public interface MessageHandler {

  void handle(Connection tx, InboundMessage message) throws Exception;
}
