package dev.handoff.consumer.internal;

import dev.handoff.core.internal.LuaScript;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The stream consumer's steps on a group's pending entries that depend on who owns an entry: lease renewal,
 * backoff, delivery counts, and the removal of a consumer that has nothing pending. Each step is one Lua script, so
 * the owner check and the act on the entry are atomic: a consumer never renews, defers or counts an entry that
 * another consumer claimed an instant earlier, and never deletes a consumer whose pending entries would be orphaned.
 *
 * <p>Thread-safe: it keeps no state; the connections are {@link RedisGroups}'s.
 */
final class PendingEntryScripts {

  // The owner check and the claim must be one atomic step, or a renewal could steal an entry that another
  // consumer claimed an instant earlier (XCLAIM with min-idle 0 takes anything).
  private static final LuaScript RENEW = LuaScript.of("stream-renew", """
      local lost = {}
      for i = 3, #ARGV do
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
        if p[1] ~= nil and p[1][2] == ARGV[2] then
          redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
        else
          lost[#lost + 1] = ARGV[i]
        end
      end
      return lost""");

  // Backoff by idle-time reset: an entry with idle = minIdle - backoff becomes claimable after backoff. JUSTID so
  // the delivery count is not bumped (the next claim bumps it, and that is the attempt that counts).
  private static final LuaScript DEFER = LuaScript.of("stream-defer", """
      local n = 0
      for i = 3, #ARGV, 2 do
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
        if p[1] ~= nil and p[1][2] == ARGV[2] then
          redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[i + 1], 'JUSTID')
          n = n + 1
        end
      end
      return n""");

  private static final LuaScript COUNTS = LuaScript.of("stream-delivery-counts", """
      local out = {}
      for i = 3, #ARGV do
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
        if p[1] ~= nil and p[1][2] == ARGV[2] then out[#out + 1] = p[1][4] else out[#out + 1] = -1 end
      end
      return out""");

  // Deleting a consumer with pending entries would orphan them for good (XGROUP DELCONSUMER drops them from the
  // group's PEL), so the check and the delete run as one step.
  private static final LuaScript DELETE_IDLE_CONSUMER = LuaScript.of("stream-delete-idle-consumer", """
      local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
      if #p == 0 then return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) end
      return -1""");

  /** The scripts a stream consumer runs, for the check that its ACL rule grants what they call. */
  static List<LuaScript> scripts() {
    return List.of(RENEW, DEFER, COUNTS, DELETE_IDLE_CONSUMER);
  }

  private final UnifiedJedis commands;
  private final String groupName;

  PendingEntryScripts(UnifiedJedis commands, String groupName) {
    this.commands = commands;
    this.groupName = groupName;
  }

  /** Delivery count of each ID if {@code consumer} owns it, else -1. */
  long[] deliveryCounts(String streamKey, String consumer, List<String> ids) {
    List<?> reply = (List<?>) eval(COUNTS, streamKey, consumer, ids);
    long[] out = new long[ids.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ((Number) reply.get(i)).longValue();
    }
    return out;
  }

  /** Resets the idle time of the entries {@code consumer} still owns; returns the IDs it no longer owns. */
  List<String> renew(String streamKey, String consumer, List<String> ids) {
    List<?> reply = (List<?>) eval(RENEW, streamKey, consumer, ids);
    List<String> lost = new ArrayList<>(reply.size());
    for (Object o : reply) {
      lost.add(StreamReplies.text(o));
    }
    return lost;
  }

  /** Sets each owned entry's idle time to the given milliseconds; returns how many it still owned. */
  long defer(String streamKey, String consumer, Map<String, Long> idleMillisById) {
    List<String> args = new ArrayList<>(idleMillisById.size() * 2);
    idleMillisById.forEach((id, idle) -> {
      args.add(id);
      args.add(Long.toString(idle));
    });
    return ((Number) eval(DEFER, streamKey, consumer, args)).longValue();
  }

  /** Deletes {@code consumer} from the group if it has nothing pending; -1 if it still has. */
  long deleteConsumerIfIdle(String streamKey, String consumer) {
    return ((Number) eval(DELETE_IDLE_CONSUMER, streamKey, consumer, List.of())).longValue();
  }

  private Object eval(LuaScript script, String streamKey, String consumer, List<String> rest) {
    List<String> args = new ArrayList<>(rest.size() + 2);
    args.add(groupName);
    args.add(consumer);
    args.addAll(rest);
    try {
      return script.runText(commands, List.of(streamKey), args);
    } catch (JedisDataException e) {
      throw RedisGroups.translate(e, streamKey);
    }
  }
}
