package dev.handoff.consumer.internal;

import dev.handoff.consumer.internal.RedisGroups.RawEntry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.resps.StreamEntryBinary;

/**
 * Decodes the stream commands' replies as the consumers read them: binary, over RESP2, where a raw reply keeps its
 * shape (an {@code XAUTOCLAIM} reply its third element, an entry that was deleted its {@code null} fields). Keys,
 * IDs and group names are UTF-8; field names and values stay bytes.
 *
 * <p>Thread-safe: static functions of their arguments.
 */
final class StreamReplies {

  private StreamReplies() {}

  /** The entries of an {@code XREADGROUP} reply, stream by stream; none for a {@code null} (timed out) reply. */
  static List<RawEntry> entries(List<Map.Entry<byte[], List<StreamEntryBinary>>> reply) {
    if (reply == null) {
      return List.of();
    }
    List<RawEntry> out = new ArrayList<>();
    for (Map.Entry<byte[], List<StreamEntryBinary>> stream : reply) {
      String key = text(stream.getKey());
      for (StreamEntryBinary e : stream.getValue()) {
        out.add(new RawEntry(key, e.getID().toString(), e.getFields()));
      }
    }
    return out;
  }

  /** A flat field-value list as a map in its order; {@code null} stays {@code null} (the entry is gone). */
  static Map<byte[], byte[]> fields(List<?> flat) {
    if (flat == null) {
      return null;
    }
    Map<byte[], byte[]> out = new LinkedHashMap<>(flat.size());
    for (int i = 0; i + 1 < flat.size(); i += 2) {
      out.put((byte[]) flat.get(i), (byte[]) flat.get(i + 1));
    }
    return out;
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(Object o) {
    return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
  }
}
