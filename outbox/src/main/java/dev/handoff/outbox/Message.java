package dev.handoff.outbox;

import dev.handoff.core.InvalidMessageException;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Settings;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A message to append to the outbox: a topic, a type, a payload, an optional ordering key and headers.
 *
 * <p>handoff adds the rest when it is appended: a UUIDv7 message ID (the idempotency key all the way to the
 * consumer's inbox), the shard (a stable hash of the key) and the creation time. Messages with the same key go to
 * the same shard and are delivered in append order, provided the application serializes appends for one key
 * (for example by locking the aggregate's row first).
 *
 * <p>Syntax is checked when the message is built; size limits are checked by the {@link Outbox} that appends it.
 * Instances are immutable and thread-safe.
 */
public final class Message {

  /** The pattern every message type matches, for example {@code payment.created} or {@code billing/Charge.v2}. */
  public static final Pattern TYPE_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");

  /** The pattern every header name matches. */
  public static final Pattern HEADER_NAME_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

  /** The longest ordering key, in characters. */
  public static final int MAX_KEY_LENGTH = 512;

  /** The header that carries the payload's media type when one was given. */
  public static final String CONTENT_TYPE = "content-type";

  private static final Pattern TRACEPARENT_PATTERN =
      Pattern.compile("[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}");

  private final String topic;
  private final String type;
  private final String key;
  private final byte[] payload;
  private final Map<String, String> headers;

  private Message(Builder b) {
    this.topic = b.topic;
    this.type = b.type;
    this.key = b.key;
    this.payload = b.payload;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
  }

  /**
   * Starts a message.
   *
   * @throws InvalidMessageException if the topic or type is not valid
   */
  public static Builder builder(String topic, String type) {
    return new Builder(topic, type);
  }

  public String topic() {
    return topic;
  }

  public String type() {
    return type;
  }

  /** The ordering key, or {@code null} when the message has none (it may then go to any shard). */
  public String key() {
    return key;
  }

  /** A copy of the payload. */
  public byte[] payload() {
    return payload.clone();
  }

  /** The payload's size in bytes, without copying it. */
  public int payloadSize() {
    return payload.length;
  }

  /** The headers, in the order they were added; unmodifiable. */
  public Map<String, String> headers() {
    return headers;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Message m
        && topic.equals(m.topic)
        && type.equals(m.type)
        && Objects.equals(key, m.key)
        && Arrays.equals(payload, m.payload)
        && headers.equals(m.headers);
  }

  @Override
  public int hashCode() {
    return Objects.hash(topic, type, key, Arrays.hashCode(payload), headers);
  }

  @Override
  public String toString() {
    return "Message[topic=" + topic + ", type=" + type + ", key=" + key + ", payload=" + payload.length
        + " bytes, headers=" + headers.keySet() + "]";
  }

  /** Builds a {@link Message}; not thread-safe. */
  public static final class Builder {
    private final String topic;
    private final String type;
    private String key;
    private byte[] payload = new byte[0];
    private final Map<String, String> headers = new LinkedHashMap<>();

    private Builder(String topic, String type) {
      this.topic = TopicConfig.requireValidName(topic);
      if (type == null || !TYPE_PATTERN.matcher(type).matches()) {
        throw new InvalidMessageException(
            "type",
            "type must match " + TYPE_PATTERN.pattern() + ", was "
                + (type == null ? "null" : "'" + Settings.abbreviate(type) + "'"));
      }
      this.type = type;
    }

    /** The ordering key (for example the aggregate or payment ID); at most {@value #MAX_KEY_LENGTH} characters. */
    public Builder key(String key) {
      if (key != null && (key.isEmpty() || key.length() > MAX_KEY_LENGTH)) {
        throw new InvalidMessageException(
            "key", "key must be 1 to " + MAX_KEY_LENGTH + " characters, was " + key.length());
      }
      this.key = key;
      return this;
    }

    /** The payload bytes (copied). Defaults to empty. */
    public Builder payload(byte[] payload) {
      this.payload = Objects.requireNonNull(payload, "payload").clone();
      return this;
    }

    /** A text payload, stored as UTF-8. */
    public Builder payload(String text) {
      this.payload = Objects.requireNonNull(text, "payload").getBytes(StandardCharsets.UTF_8);
      return this;
    }

    /**
     * A JSON document as the payload, stored as UTF-8, with the header {@value #CONTENT_TYPE} set to
     * {@code application/json}. The text is not parsed: handoff carries it as given.
     */
    public Builder jsonPayload(String json) {
      payload(json);
      return header(CONTENT_TYPE, "application/json");
    }

    /** Adds or replaces a header. Names match {@link #HEADER_NAME_PATTERN}; values are any text. */
    public Builder header(String name, String value) {
      if (name == null || !HEADER_NAME_PATTERN.matcher(name).matches()) {
        throw new InvalidMessageException(
            "headers",
            "header name must match " + HEADER_NAME_PATTERN.pattern() + ", was "
                + (name == null ? "null" : "'" + Settings.abbreviate(name) + "'"));
      }
      if (value == null) {
        throw new InvalidMessageException("headers", "header '" + name + "' has a null value");
      }
      headers.put(name, value);
      return this;
    }

    /** Adds or replaces every header of {@code more}. */
    public Builder headers(Map<String, String> more) {
      more.forEach(this::header);
      return this;
    }

    /**
     * The W3C trace context of the producing span ({@code version-traceid-parentid-flags}, lower-case hex), carried
     * to the consumer's handler. A {@code null} value is ignored.
     */
    public Builder traceparent(String traceparent) {
      if (traceparent == null) {
        return this;
      }
      if (!TRACEPARENT_PATTERN.matcher(traceparent).matches()) {
        throw new InvalidMessageException(
            "headers", "traceparent must be a W3C trace context like 00-<32 hex>-<16 hex>-<2 hex>, was '"
                + Settings.abbreviate(traceparent) + "'");
      }
      return header(StreamMessage.TRACEPARENT, traceparent);
    }

    public Message build() {
      return new Message(this);
    }
  }
}
