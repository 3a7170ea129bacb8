package dev.handoff.consumer;

import java.time.Instant;
import java.util.UUID;

/**
 * A message a consumer group gave up on, as stored in the {@code dead_letter} table.
 *
 * @param id the dead letter's id (pass it to {@link HandoffConsumer#retry(long)})
 * @param messageId the message ID, or {@code null} when the entry could not be decoded or its payload was lost
 * @param streamKey the stream it was read from
 * @param streamId the stream entry ID
 * @param type the message type, or {@code null} when unknown
 * @param deliveries how many times it had been delivered
 * @param error why it was dead-lettered: the handler's exception, {@code malformed: ...} or {@code lost: ...}
 * @param deadAt when it was dead-lettered
 * @param status {@code dead} or {@code retried}
 */
public record DeadLetter(long id, UUID messageId, String streamKey, String streamId, String type, int deliveries,
    String error, Instant deadAt, String status) {

  /** Whether {@link HandoffConsumer#retry(long)} can re-run it (the stored message is complete). */
  public boolean retryable() {
    return messageId != null && type != null && "dead".equals(status);
  }
}
