package dev.handoff.relay.internal;

import java.time.Instant;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Redis at its {@code maxmemory} under {@code noeviction}: it refuses every command that may need memory
 * ({@code OOM command not allowed when used memory > 'maxmemory'}), while reads and deletions still run. What the
 * relay saw of the last such episode, for its health and its one WARN line.
 *
 * <p>Thread-safe: written by the relay's thread, read by anyone asking for health.
 */
final class RedisMemory {

  /** What the relay saw when Redis was last full: its memory figures and the owned streams after a trim. */
  record Full(Instant since, long usedMemory, long maxMemory, long streamsLength, long evicted) {

    String describe() {
      String memory = "used_memory " + bytes(usedMemory) + " of maxmemory " + bytes(maxMemory);
      if (streamsLength < 0) {
        return memory + "; its lists hold what consumers have not taken or acknowledged, which they free as they go";
      }
      return memory + "; its streams hold " + streamsLength + " entries that some group has not finished (trimmed "
          + evicted + " just now)";
    }

    private static String bytes(long n) {
      return n < 0 ? "unknown" : n + " bytes";
    }
  }

  private volatile Full full;

  /** Whether {@code failure}, or what it suppressed or was caused by, is Redis refusing a write for memory. */
  static boolean isOutOfMemory(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof JedisDataException && t.getMessage() != null && t.getMessage().startsWith("OOM ")) {
        return true;
      }
      for (Throwable s : t.getSuppressed()) {
        if (isOutOfMemory(s)) {
          return true;
        }
      }
    }
    return false;
  }

  /** {@code used_memory} and {@code maxmemory} from {@code INFO memory} (a read, allowed when full); -1 if unknown. */
  static long[] figures(UnifiedJedis redis) {
    long used = -1;
    long max = -1;
    try {
      for (String line : redis.info("memory").split("\r?\n")) {
        if (line.startsWith("used_memory:")) {
          used = Long.parseLong(line.substring("used_memory:".length()).trim());
        } else if (line.startsWith("maxmemory:")) {
          max = Long.parseLong(line.substring("maxmemory:".length()).trim());
        }
      }
    } catch (RuntimeException e) {
      // a cluster client or a user without +info: the episode is still reported, without its figures
    }
    return new long[] {used, max};
  }

  /** Records an episode's latest figures; the first keeps its start. */
  void seen(long usedMemory, long maxMemory, long streamsLength, long evicted) {
    Full before = full;
    full = new Full(before != null ? before.since() : Instant.now(), usedMemory, maxMemory, streamsLength, evicted);
  }

  /** A cycle went through: the episode, if any, is over. */
  void cleared() {
    full = null;
  }

  /** The current episode, or null. */
  Full current() {
    return full;
  }
}
