package dev.handoff.core;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The wire format of handoff's Redis list elements (the {@link Transport#LIST list transport}) and the naming of
 * the keys around each list. Shared by the relay and the list consumers.
 *
 * <p>A list has no entry IDs, so each element carries its own identity. An element is one binary value:
 *
 * <pre>
 * hl1 &lt;ms&gt;-&lt;seq&gt; &lt;message_id&gt;\n        a text header (format version 1, the relay's ID, the message ID)
 * u16 field count, then per field:    the fields of {@link StreamFormat#encode(StreamMessage)}, unchanged
 *   u16 name length, name (UTF-8), u32 value length, value bytes
 * </pre>
 *
 * <p>The ID is the stream-style ID the relay assigns per shard, strictly increasing in assignment order (which
 * follows commit visibility, not outbox id order); with the
 * message ID it makes every element unique, so {@code LREM key 1 element} acknowledges exactly one delivery. The
 * header is plain text so that the relay's and consumers' Lua scripts can read the ID and message ID without
 * decoding the rest.
 *
 * <p>Keys of one (topic, shard), all in the Redis Cluster slot of the hash tag {@code {<topic>:<shard>}}:
 * <ul>
 *   <li>{@code <prefix>:{<topic>:<shard>}:list} the list (RPUSH by the relay, taken from the left);
 *   <li>{@code ...:list:relay} the relay's hash: last pushed ID, count of pushed elements, capacity;
 *   <li>{@code ...:list:consumers} the registry of processing lists (field = processing list key, value = the
 *       consumer's last heartbeat, server time in seconds);
 *   <li>{@code ...:list:processing:<consumer>} one consumer's processing list, and {@code ...:alive} beside it,
 *       its heartbeat key (with a TTL);
 *   <li>{@code ...:list:deliveries} a hash: message ID to deliveries that ended without an outcome.
 * </ul>
 *
 * <p>This class is thread-safe.
 */
public final class ListFormat {

  /** The element format version this code writes and reads. */
  public static final int VERSION = 1;

  private static final String MAGIC = "hl" + VERSION + " ";
  private static final Pattern HEADER = Pattern.compile("hl1 (\\d+-\\d+) ([0-9a-fA-F-]{36})");
  private static final int MAX_HEADER = 128;

  private ListFormat() {}

  /** The list of one shard of a topic: {@code <prefix>:{<topic>:<shard>}:list}. */
  public static String listKey(String keyPrefix, String topic, int shard) {
    return StreamFormat.streamKey(keyPrefix, topic, shard) + ":list";
  }

  /** The relay's bookkeeping hash beside {@code listKey}. */
  public static String relayKey(String listKey) {
    return listKey + ":relay";
  }

  /** The registry of the processing lists of {@code listKey}'s consumers. */
  public static String consumersKey(String listKey) {
    return listKey + ":consumers";
  }

  /** The per-message count of deliveries that ended without an outcome. */
  public static String deliveriesKey(String listKey) {
    return listKey + ":deliveries";
  }

  /** The processing list of consumer {@code consumer} on {@code listKey}. */
  public static String processingKey(String listKey, String consumer) {
    return listKey + ":processing:" + consumer;
  }

  /** The heartbeat key of the consumer that owns {@code processingKey}. */
  public static String heartbeatKey(String processingKey) {
    return processingKey + ":alive";
  }

  /** The consumer name in a processing list key made by {@link #processingKey}. */
  public static String consumerOf(String processingKey) {
    int at = processingKey.lastIndexOf(":processing:");
    return at < 0 ? processingKey : processingKey.substring(at + ":processing:".length());
  }

  /** A decoded element: its relay-assigned ID, its message ID, and its stream-format fields. */
  public record Element(String id, UUID messageId, Map<byte[], byte[]> fields) {

    /** Decodes the fields into a message; see {@link StreamFormat#decode(Map)}. */
    public StreamMessage message() {
      return StreamFormat.decode(fields);
    }
  }

  /** The element for {@code message}, which the relay assigned {@code id} ({@code ms-seq}). */
  public static byte[] encode(String id, StreamMessage message) {
    Map<byte[], byte[]> fields = StreamFormat.encode(message);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(message.payload().length + 256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.write((MAGIC + id + " " + message.messageId() + "\n").getBytes(StandardCharsets.US_ASCII));
      out.writeShort(fields.size());
      for (Map.Entry<byte[], byte[]> f : fields.entrySet()) {
        out.writeShort(f.getKey().length);
        out.write(f.getKey());
        out.writeInt(f.getValue().length);
        out.write(f.getValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Reads the header only: the element's ID and message ID, or {@code null} when the header is not a version-1
   * header.
   */
  public static String[] header(byte[] element) {
    int end = -1;
    for (int i = 0; i < Math.min(element.length, MAX_HEADER); i++) {
      if (element[i] == '\n') {
        end = i;
        break;
      }
    }
    if (end < 0) {
      return null;
    }
    Matcher m = HEADER.matcher(new String(element, 0, end, StandardCharsets.US_ASCII));
    return m.matches() ? new String[] {m.group(1), m.group(2)} : null;
  }

  /**
   * Decodes an element.
   *
   * @throws MalformedEntryException if the header or the field frame cannot be read
   */
  public static Element decode(byte[] element) {
    String[] header = header(element);
    if (header == null) {
      throw new MalformedEntryException(StreamFormat.VERSION_FIELD,
          "list element does not start with a version " + VERSION + " header");
    }
    UUID messageId;
    try {
      messageId = UUID.fromString(header[1]);
    } catch (IllegalArgumentException e) {
      throw new MalformedEntryException(StreamFormat.MESSAGE_ID, "list element header has no UUID message id", e);
    }
    ByteBuffer in = ByteBuffer.wrap(element);
    int start = 0;
    while (element[start] != '\n') {
      start++;
    }
    in.position(start + 1);
    Map<byte[], byte[]> fields = new LinkedHashMap<>(16);
    try {
      int count = Short.toUnsignedInt(in.getShort());
      for (int i = 0; i < count; i++) {
        byte[] name = new byte[Short.toUnsignedInt(in.getShort())];
        in.get(name);
        int length = in.getInt();
        if (length < 0 || length > in.remaining()) {
          throw new MalformedEntryException(new String(name, StandardCharsets.UTF_8),
              "list element " + header[0] + " has a field longer than the element");
        }
        byte[] value = new byte[length];
        in.get(value);
        fields.put(name, value);
      }
    } catch (java.nio.BufferUnderflowException e) {
      throw new MalformedEntryException(StreamFormat.PAYLOAD, "list element " + header[0] + " is truncated", e);
    }
    if (in.hasRemaining()) {
      throw new MalformedEntryException(StreamFormat.PAYLOAD,
          "list element " + header[0] + " has " + in.remaining() + " trailing bytes");
    }
    return new Element(header[0], messageId, fields);
  }
}
