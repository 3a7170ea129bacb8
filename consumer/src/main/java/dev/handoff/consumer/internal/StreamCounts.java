package dev.handoff.consumer.internal;

import dev.handoff.core.internal.LuaScript;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;

/**
 * Counts a stream's entries between two IDs without moving them to the client: a page of at most 500 is counted
 * by a script per call, and the count stops at a limit, so that a count never blocks Redis for long.
 *
 * <p>Thread-safe: it keeps no state.
 */
final class StreamCounts {

  private static final LuaScript COUNT_RANGE = LuaScript.of("admin-count-range", """
      local r = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[2], 'COUNT', tonumber(ARGV[3]))
      if #r == 0 then return {0, ''} end
      return {#r, r[#r][1]}""");
  private static final int PAGE = 500;

  private StreamCounts() {}

  /** The counting script, for ACL checks. */
  static LuaScript script() {
    return COUNT_RANGE;
  }

  /**
   * {@code [count, exact]} of the entries from {@code from} to {@code to} (XRANGE bounds: an ID, {@code (ID} for
   * exclusive, {@code -}, {@code +}); {@code exact} is 0 when more than {@code limit} are there.
   */
  static long[] count(UnifiedJedis redis, String key, String from, String to, long limit) {
    long counted = 0;
    String cursor = from;
    while (counted < limit) {
      int want = (int) Math.min(PAGE, limit - counted);
      List<?> page = page(redis, key, cursor, to, want);
      long n = ((Number) page.get(0)).longValue();
      counted += n;
      if (n < want) {
        return new long[] {counted, 1};
      }
      cursor = "(" + page.get(1);
    }
    return new long[] {counted, ((Number) page(redis, key, cursor, to, 1).get(0)).longValue() == 0 ? 1 : 0};
  }

  private static List<?> page(UnifiedJedis redis, String key, String from, String to, int count) {
    return (List<?>) COUNT_RANGE.runText(redis, List.of(key), List.of(from, to, Integer.toString(count)));
  }
}
