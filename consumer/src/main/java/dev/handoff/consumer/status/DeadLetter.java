package dev.handoff.consumer.status;

import java.time.Instant;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;

/**
 * A message a consumer group gave up on, as stored in the {@code dead_letter} table.
 *
 * @param id the dead letter's id (pass it to {@link dev.handoff.consumer.HandoffConsumer#retry(long)})
 * @param messageId the message ID, or {@code null} when the entry could not be decoded or its payload was lost
 * @param type the message type, or {@code null} when unknown
 * @param delivery the stream entry it was read from and how many times it had been delivered; never {@code null}
 * @param error why it was dead-lettered: the handler's exception, {@code malformed: ...} or {@code lost: ...}
 * @param deadAt when it was dead-lettered
 * @param status {@code dead} or {@code retried}
 * @param group the consumer group that gave up on it
 * @param topic the message's topic
 * @param retry what became of retrying it (requested, done, failed again); never {@code null}, its fields
 *     {@code null} while no retry was requested or run
 */
public record DeadLetter(long id, UUID messageId, String type, Delivery delivery, String error, Instant deadAt,
    String status, String group, String topic, Retry retry) {

  public DeadLetter {
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(retry, "retry");
  }

  /**
   * The stream entry the group gave up on, and how many times it had been delivered.
   *
   * @param streamKey the stream it was read from (on lists: the list)
   * @param streamId the stream entry ID
   * @param count how many times it had been delivered
   */
  public record Delivery(String streamKey, String streamId, int count) {}

  /**
   * The dead letter's retry columns.
   *
   * @param requestedAt when a retry was requested ({@link dev.handoff.consumer.admin.DeadLetterAdmin#requestRetry})
   *     and not yet run by a consumer of the group, or {@code null}
   * @param retriedAt when it was retried, or {@code null}
   * @param failedAt when a requested retry last ran and the handler failed again, or {@code null}
   * @param error why that requested retry failed (the handler's exception), or {@code null}; the dead letter's
   *     {@code error} keeps the original reason
   */
  public record Retry(Instant requestedAt, Instant retriedAt, Instant failedAt, String error) {}

  /** Where a dead letter stands, from its status and its retry columns. */
  public enum State {
    /** Dead, no retry requested. */
    DEAD,
    /** A retry was requested; a running consumer of the group runs it at its next housekeeping turn. */
    RETRY_REQUESTED,
    /** Retried: the handler ran and committed, or the message had been processed meanwhile. */
    RETRIED,
    /** Still dead: a requested retry ran and the handler failed again ({@code retry().error()} says why). */
    RETRY_FAILED;

    /** The state as the command line shows it: {@code dead}, {@code retry-requested}, ... */
    public String label() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
  }

  /** Where this dead letter stands; a pending request wins over an earlier failed one. */
  public State state() {
    if ("retried".equals(status)) {
      return State.RETRIED;
    }
    if (retry.requestedAt() != null) {
      return State.RETRY_REQUESTED;
    }
    return retry.failedAt() != null ? State.RETRY_FAILED : State.DEAD;
  }

  /** Whether {@link dev.handoff.consumer.HandoffConsumer#retry(long)} can re-run it (the stored message is complete). */
  public boolean retryable() {
    return messageId != null && type != null && "dead".equals(status);
  }
}
