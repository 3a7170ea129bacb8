package dev.handoff.core;

import dev.handoff.core.internal.InstantText;
import dev.handoff.core.internal.Json;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The wire format of handoff's Redis stream entries, shared by the relay and the consumers, and the naming of the
 * Redis keys.
 *
 * <p>An entry has these fields (all UTF-8 text except {@code payload}, which is the raw payload bytes):
 * {@value #VERSION_FIELD} (format version, currently {@value #VERSION}), {@value #MESSAGE_ID}, {@value #OUTBOX_ID},
 * {@value #TOPIC}, {@value #TYPE}, {@value #KEY} (absent when the message has no key), {@value #HEADERS} (a JSON
 * object of strings), {@value #CREATED_AT} (ISO-8601 instant) and {@value #PAYLOAD}.
 *
 * <p>A stream is named {@code <prefix>:{<topic>:<shard>}}: the hash tag keeps all keys of one stream in one Redis
 * Cluster slot. This class is thread-safe.
 */
public final class StreamFormat {

  /** The format version this code writes and reads. */
  public static final int VERSION = 1;

  public static final String VERSION_FIELD = "v";
  public static final String MESSAGE_ID = "message_id";
  public static final String OUTBOX_ID = "outbox_id";
  public static final String TOPIC = "topic";
  public static final String TYPE = "type";
  public static final String KEY = "key";
  public static final String HEADERS = "headers";
  public static final String CREATED_AT = "created_at";
  public static final String PAYLOAD = "payload";

  /** The default prefix of every Redis key handoff uses. */
  public static final String DEFAULT_KEY_PREFIX = "handoff";

  /** The pattern every key prefix matches. */
  public static final Pattern KEY_PREFIX_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,63}");

  private StreamFormat() {}

  /** The stream of one shard of a topic: {@code <prefix>:{<topic>:<shard>}}. */
  public static String streamKey(String keyPrefix, String topic, int shard) {
    return requireValidKeyPrefix(keyPrefix) + ":{" + TopicConfig.requireValidName(topic) + ":" + shard + "}";
  }

  /**
   * The relay's bookkeeping hash beside {@code streamKey} (same hash slot): field {@code added} counts the entries
   * the relays ever added, which is how the relay tells that Redis lost part of the stream.
   */
  public static String relayKey(String streamKey) {
    return streamKey + ":relay";
  }

  /**
   * Returns {@code keyPrefix} if it matches {@link #KEY_PREFIX_PATTERN}.
   *
   * @throws IllegalArgumentException otherwise
   */
  public static String requireValidKeyPrefix(String keyPrefix) {
    if (keyPrefix == null || !KEY_PREFIX_PATTERN.matcher(keyPrefix).matches()) {
      throw new IllegalArgumentException(
          "keyPrefix must match " + KEY_PREFIX_PATTERN.pattern() + ", was "
              + (keyPrefix == null ? "null" : "'" + keyPrefix + "'"));
    }
    return keyPrefix;
  }

  /** The fields of the stream entry for {@code message}, in a stable order. */
  public static Map<byte[], byte[]> encode(StreamMessage message) {
    Map<byte[], byte[]> fields = new LinkedHashMap<>(16);
    put(fields, VERSION_FIELD, Integer.toString(VERSION));
    put(fields, MESSAGE_ID, message.messageId().toString());
    put(fields, OUTBOX_ID, Long.toString(message.outboxId()));
    put(fields, TOPIC, message.topic());
    put(fields, TYPE, message.type());
    if (message.key() != null) {
      put(fields, KEY, message.key());
    }
    put(fields, HEADERS, Json.writeStringMap(message.headers()));
    put(fields, CREATED_AT, InstantText.format(message.createdAt()));
    fields.put(bytes(PAYLOAD), message.payload());
    return fields;
  }

  /**
   * Decodes a stream entry's fields.
   *
   * @throws MalformedEntryException naming the field that is missing or unreadable, or the unknown version
   */
  public static StreamMessage decode(Map<byte[], byte[]> rawFields) {
    if (rawFields == null) {
      throw new MalformedEntryException(PAYLOAD, "the stream entry has no fields (it was deleted or trimmed)");
    }
    Map<String, byte[]> fields = new HashMap<>(rawFields.size() * 2);
    rawFields.forEach((k, v) -> fields.put(new String(k, StandardCharsets.UTF_8), v));
    String version = text(fields, VERSION_FIELD);
    if (!Integer.toString(VERSION).equals(version)) {
      throw new MalformedEntryException(
          VERSION_FIELD, "stream entry format version '" + version + "' is not supported (this code reads "
              + VERSION + ")");
    }
    UUID messageId;
    try {
      messageId = UUID.fromString(text(fields, MESSAGE_ID));
    } catch (IllegalArgumentException e) {
      throw new MalformedEntryException(MESSAGE_ID, "message_id is not a UUID: " + e.getMessage(), e);
    }
    long outboxId;
    try {
      outboxId = Long.parseLong(text(fields, OUTBOX_ID));
    } catch (NumberFormatException e) {
      throw new MalformedEntryException(OUTBOX_ID, "outbox_id is not a number", e);
    }
    Map<String, String> headers;
    try {
      headers = Json.readStringMap(text(fields, HEADERS));
    } catch (IllegalArgumentException e) {
      throw new MalformedEntryException(HEADERS, "headers of message " + messageId + ": " + e.getMessage(), e);
    }
    Instant createdAt;
    try {
      createdAt = InstantText.parse(text(fields, CREATED_AT));
    } catch (DateTimeParseException e) {
      throw new MalformedEntryException(CREATED_AT, "created_at of message " + messageId + " is not an instant", e);
    }
    byte[] payload = fields.get(PAYLOAD);
    if (payload == null) {
      throw new MalformedEntryException(PAYLOAD, "message " + messageId + " has no payload field");
    }
    byte[] key = fields.get(KEY);
    return new StreamMessage(
        messageId,
        outboxId,
        text(fields, TOPIC),
        text(fields, TYPE),
        key == null ? null : new String(key, StandardCharsets.UTF_8),
        headers,
        createdAt,
        payload);
  }

  private static String text(Map<String, byte[]> fields, String name) {
    byte[] value = fields.get(name);
    if (value == null) {
      throw new MalformedEntryException(name, "stream entry has no '" + name + "' field");
    }
    return new String(value, StandardCharsets.UTF_8);
  }

  private static void put(Map<byte[], byte[]> fields, String name, String value) {
    fields.put(bytes(name), bytes(value));
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
