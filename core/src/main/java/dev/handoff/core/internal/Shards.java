package dev.handoff.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.zip.CRC32;

/**
 * The stable mapping of an ordering key to a shard: CRC-32 of the key's UTF-8 bytes, modulo the shard count. It
 * never changes between versions, so a key keeps its shard (and its order) across restarts and upgrades. A
 * message without a key has no order to keep and is spread by its message ID.
 */
public final class Shards {

  private Shards() {}

  public static int of(String key, UUID messageId, int shards) {
    if (shards == 1) {
      return 0;
    }
    if (key == null) {
      return Math.floorMod(messageId.getLeastSignificantBits(), shards);
    }
    CRC32 crc = new CRC32();
    crc.update(key.getBytes(StandardCharsets.UTF_8));
    return (int) (crc.getValue() % shards);
  }
}
