package dev.handoff.core;

import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * A message as it travels in a Redis stream entry: what the producer appended plus the identifiers handoff gave
 * it. The relay writes it with {@link StreamFormat#encode(StreamMessage)}, consumers read it with
 * {@link StreamFormat#decode(Map)}.
 *
 * @param messageId the UUIDv7 that identifies the message end to end (the consumer's idempotency key)
 * @param outboxId the id of the outbox row it came from
 * @param topic the topic
 * @param type the message type
 * @param key the ordering key, or {@code null}
 * @param headers the headers, including {@code traceparent} when the producer passed one; unmodifiable
 * @param createdAt when the producer's transaction appended it (database time)
 * @param payload the payload bytes (not copied: treat as read-only)
 */
public record StreamMessage(
    UUID messageId,
    long outboxId,
    String topic,
    String type,
    String key,
    Map<String, String> headers,
    Instant createdAt,
    byte[] payload) {

  /** The header that carries the W3C trace context. */
  public static final String TRACEPARENT = "traceparent";

  public StreamMessage {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(type, "type");
    headers = Map.copyOf(headers);
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(payload, "payload");
  }

  /** The W3C trace context the producer passed, or {@code null}. */
  public String traceparent() {
    return headers.get(TRACEPARENT);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StreamMessage m
        && messageId.equals(m.messageId)
        && outboxId == m.outboxId
        && topic.equals(m.topic)
        && type.equals(m.type)
        && Objects.equals(key, m.key)
        && headers.equals(m.headers)
        && createdAt.equals(m.createdAt)
        && Arrays.equals(payload, m.payload);
  }

  @Override
  public int hashCode() {
    return Objects.hash(messageId, outboxId, topic, type, key, headers, createdAt, Arrays.hashCode(payload));
  }

  @Override
  public String toString() {
    return "StreamMessage[messageId=" + messageId + ", outboxId=" + outboxId + ", topic=" + topic + ", type="
        + type + ", key=" + key + ", payload=" + payload.length + " bytes]";
  }
}
