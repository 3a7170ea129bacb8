package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.core.MalformedEntryException;
import dev.handoff.core.StreamFormat;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;

/** One stream entry in a batch: what was read, how often it was delivered, and what it decoded to. */
final class Delivery {

  final String streamKey;
  final int shard;
  final String id;
  final long deliveries;
  final Map<byte[], byte[]> fields;
  /** The decoded message, or {@code null} when lost or malformed. */
  final InboundMessage message;
  final MalformedEntryException malformed;
  /** The message ID of a malformed entry, when its {@code message_id} field alone was readable. */
  final UUID messageIdHint;

  private Delivery(String streamKey, int shard, String id, long deliveries, Map<byte[], byte[]> fields,
      InboundMessage message, MalformedEntryException malformed, UUID messageIdHint) {
    this.streamKey = streamKey;
    this.shard = shard;
    this.id = id;
    this.deliveries = deliveries;
    this.fields = fields;
    this.message = message;
    this.malformed = malformed;
    this.messageIdHint = messageIdHint;
  }

  static Delivery of(String streamKey, int shard, String id, long deliveries, Map<byte[], byte[]> fields) {
    if (fields == null) {
      return new Delivery(streamKey, shard, id, deliveries, null, null, null, null);
    }
    try {
      InboundMessage m = InboundMessage.of(StreamFormat.decode(fields), streamKey, id, deliveries);
      return new Delivery(streamKey, shard, id, deliveries, fields, m, null, null);
    } catch (MalformedEntryException e) {
      return new Delivery(streamKey, shard, id, deliveries, fields, null, e, hint(fields));
    } catch (RuntimeException e) {
      MalformedEntryException wrapped = new MalformedEntryException("?", "undecodable entry: " + e, e);
      return new Delivery(streamKey, shard, id, deliveries, fields, null, wrapped, hint(fields));
    }
  }

  static Delivery of(InboundMessage m, int shard) {
    return new Delivery(m.delivery().streamKey(), shard, m.delivery().streamId(), m.delivery().count(), Map.of(), m,
        null, null);
  }

  boolean lost() {
    return fields == null && message == null;
  }

  /** The idempotency key, when known. */
  UUID messageId() {
    return message != null ? message.messageId() : messageIdHint;
  }

  byte[] field(String name) {
    if (fields == null) {
      return null;
    }
    for (Map.Entry<byte[], byte[]> e : fields.entrySet()) {
      if (new String(e.getKey(), StandardCharsets.UTF_8).equals(name)) {
        return e.getValue();
      }
    }
    return null;
  }

  private static UUID hint(Map<byte[], byte[]> fields) {
    for (Map.Entry<byte[], byte[]> e : fields.entrySet()) {
      if (StreamFormat.MESSAGE_ID.equals(new String(e.getKey(), StandardCharsets.UTF_8))) {
        try {
          return UUID.fromString(new String(e.getValue(), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException notAUuid) {
          return null;
        }
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return streamKey + "/" + id + (message != null ? " (" + message.messageId() + ")" : "");
  }
}
