package dev.handoff.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method as the handler of a consumer group of a topic:
 *
 * <pre>
 * &#64;HandoffListener(topic = "orders", group = "invoicing")
 * void on(InboundMessage message) {
 *   jdbc.update("INSERT INTO invoice (order_id) VALUES (?)", message.key());
 * }
 * </pre>
 *
 * <p><b>Once per group.</b> Each call runs inside a transaction of the application's
 * {@code PlatformTransactionManager}, begun by handoff, which also holds the message's inbox marker. Whatever the
 * method writes through Spring on the application's {@code DataSource} ({@code JdbcTemplate}, jOOQ's
 * {@code DSLContext}, JPA repositories and {@code EntityManager}, {@code @Transactional} services with the default
 * propagation) commits with the marker, once, or not at all. The message is acknowledged in Redis only after that
 * commit. A method that throws fails its message: it is delivered again after a backoff and becomes a dead letter
 * after {@code handoff.consumers.<group>.max-deliveries} deliveries, with nothing of its failed deliveries committed.
 *
 * <p><b>Refused.</b> Starting a transaction of its own inside the call ({@code REQUIRES_NEW}, {@code NOT_SUPPORTED})
 * is refused with an {@code IllegalTransactionStateException}; committing or rolling back the {@code Connection}
 * parameter is refused with an {@code SQLException}; a {@code COMMIT} run as SQL is detected when the method returns.
 * Each fails the message, and the failure shows in its dead letter.
 *
 * <p><b>Parameters.</b> An {@link dev.handoff.consumer.InboundMessage}, and optionally a {@link java.sql.Connection}:
 * the transaction's own connection, for plain JDBC. The method's return value is ignored. Calls are made on the
 * group's worker threads; a method of a group with more than one worker must be thread-safe.
 *
 * <p>One method per topic and group in the application. The topic must be declared under {@code handoff.topics}.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface HandoffListener {

  /** The topic, declared under {@code handoff.topics}. */
  String topic();

  /** The consumer group; its settings are under {@code handoff.consumers.<group>}. */
  String group();
}
