package dev.handoff.consumer;

import dev.handoff.core.StreamMessage;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * A message as a handler receives it: what the producer appended plus where it was read from.
 *
 * @param messageId the idempotency key (UUIDv7 from the producer); the inbox marker is {@code (group, messageId)}
 * @param outboxId the producer's outbox row id
 * @param topic the topic
 * @param type the message type
 * @param key the ordering key, or {@code null}
 * @param headers the headers (including {@code traceparent} when present); unmodifiable
 * @param createdAt when the producer appended it
 * @param payload the payload bytes (not copied: treat as read-only)
 * @param delivery where it was read from and how many times it was delivered; never {@code null}
 */
public record InboundMessage(
    UUID messageId,
    long outboxId,
    String topic,
    String type,
    String key,
    Map<String, String> headers,
    Instant createdAt,
    byte[] payload,
    Delivery delivery) {

  public InboundMessage {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(type, "type");
    headers = Map.copyOf(headers);
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(payload, "payload");
    Objects.requireNonNull(delivery, "delivery");
  }

  /**
   * Where a message was read from, and how many times its group has delivered it.
   *
   * @param streamKey the Redis stream it was read from (on lists: the list)
   * @param streamId the stream entry ID, {@code ms-seq}
   * @param count how many times the group has delivered this entry, this delivery included (1 for a first
   *     delivery; for a retried dead letter, the count when it was dead-lettered; 0 for a replay)
   */
  public record Delivery(String streamKey, String streamId, long count) {

    public Delivery {
      Objects.requireNonNull(streamKey, "streamKey");
      Objects.requireNonNull(streamId, "streamId");
    }
  }

  /** Builds the handler's view of a decoded stream entry. */
  public static InboundMessage of(StreamMessage m, String streamKey, String streamId, long deliveries) {
    return new InboundMessage(m.messageId(), m.outboxId(), m.topic(), m.type(), m.key(), m.headers(),
        m.createdAt(), m.payload(), new Delivery(streamKey, streamId, deliveries));
  }

  /** The payload decoded as UTF-8 (JSON payloads, for instance). */
  public String payloadAsString() {
    return new String(payload, StandardCharsets.UTF_8);
  }

  /** The W3C trace context the producer passed, or {@code null}. */
  public String traceparent() {
    return headers.get(StreamMessage.TRACEPARENT);
  }

  /** The message as it travels in the stream (for re-publishing or replaying it). */
  public StreamMessage toStreamMessage() {
    return new StreamMessage(messageId, outboxId, topic, type, key, headers, createdAt, payload);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof InboundMessage m
        && toStreamMessage().equals(m.toStreamMessage())
        && delivery.equals(m.delivery);
  }

  @Override
  public int hashCode() {
    return Objects.hash(toStreamMessage(), delivery.streamKey(), delivery.streamId(), delivery.count());
  }

  @Override
  public String toString() {
    return "InboundMessage[messageId=" + messageId + ", type=" + type + ", key=" + key + ", stream="
        + delivery.streamKey() + ", id=" + delivery.streamId() + ", deliveries=" + delivery.count() + ", payload="
        + payload.length + " bytes]";
  }
}
