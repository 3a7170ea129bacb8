package dev.handoff.consumer.internal;

import dev.handoff.core.ListFormat;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.ListScripts;
import dev.handoff.core.internal.LuaScript;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.ListDirection;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Every Redis command of the list consumer, and its only contact with Jedis. Like {@link RedisGroups}: one pool of
 * reader connections (one per worker) for {@code BLMOVE}, whose socket timeout is the block timeout plus a margin,
 * and one pool for everything else, with a finite wait; both RESP2.
 *
 * <p>The scripts touch the processing lists and heartbeat keys named in the shard's registry, which are in the
 * shard's hash slot but not all passed as {@code KEYS}: fine on a standalone server and within one Cluster slot.
 *
 * <p>Thread-safe.
 */
public final class ListQueues implements AutoCloseable {

  /** An element taken, with the deliveries it had before this one (that ended without an outcome). */
  public record Taken(byte[] element, long previousDeliveries) {}

  /** What a reaper pass did on one list. */
  public record Reaped(long returned, long consumers) {}

  /** One processing list in the registry. */
  public record Holder(String processingKey, long length, boolean alive, String oldestId) {}

  // KEYS: list, processing, deliveries. ARGV: n. Moves up to n elements, oldest first, and reads their counts.
  // Declared allow-oom, as are the heartbeat, the delivery count and the reaper: moving elements and keeping this
  // small bookkeeping is what lets consumers go on, and so free memory, when Redis is full.
  private static final LuaScript TAKE = ListScripts.runningWhenFull("list-take", """
      local out = {}
      for i = 1, tonumber(ARGV[1]) do
        local e = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
        if not e then break end
        local _, id = element_header(e)
        local c = 0
        if id then c = tonumber(redis.call('HGET', KEYS[3], id) or '0') end
        out[#out + 1] = e
        out[#out + 1] = c
      end
      return out""");

  // KEYS: processing, deliveries. ARGV: element, message id ('' when unknown), ... LREM count 1: one occurrence per
  // acknowledgement, even when a duplicate push put the same element in the list twice.
  private static final LuaScript ACK = LuaScript.of("list-ack", """
      local removed = 0
      for i = 1, #ARGV, 2 do
        local n = redis.call('LREM', KEYS[1], 1, ARGV[i])
        if n > 0 then
          removed = removed + n
          if ARGV[i + 1] ~= '' then redis.call('HDEL', KEYS[2], ARGV[i + 1]) end
        end
      end
      return removed""");

  // KEYS: processing, deliveries. ARGV: element, message id, ... Counts a delivery that ended without an outcome for
  // each element still held; -1 for one that is gone (the reaper returned it: this consumer was presumed dead).
  private static final LuaScript COUNT_FAILED = ListScripts.runningWhenFull("list-count-failed", """
      local out = {}
      for i = 1, #ARGV, 2 do
        if not redis.call('LPOS', KEYS[1], ARGV[i]) then
          out[#out + 1] = -1
        elseif ARGV[i + 1] == '' then
          out[#out + 1] = 0
        else
          out[#out + 1] = redis.call('HINCRBY', KEYS[2], ARGV[i + 1], 1)
        end
      end
      return out""");

  // KEYS: heartbeat key, registry. ARGV: processing key, ttl ms. The registry value is the server time in seconds.
  private static final LuaScript HEARTBEAT = ListScripts.runningWhenFull("list-heartbeat", """
      redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
      redis.call('HSET', KEYS[2], ARGV[1], redis.call('TIME')[1])
      return 1""");

  // KEYS: list, registry, deliveries. ARGV: seconds after which a dead, empty registration is forgotten; a processing
  // key to release now whatever its heartbeat ('' for none). Moves every element of each dead consumer's processing
  // list back to the head of the list, keeping their order (RIGHT to LEFT, last first), counting one delivery each.
  private static final LuaScript REAP = ListScripts.runningWhenFull("list-reap", """
      local now = tonumber(redis.call('TIME')[1])
      local returned, consumers = 0, 0
      local entries = redis.call('HGETALL', KEYS[2])
      local candidates = {}
      local seenRelease = false
      for i = 1, #entries, 2 do
        candidates[#candidates + 1] = {entries[i], tonumber(entries[i + 1])}
        if entries[i] == ARGV[2] then seenRelease = true end
      end
      if ARGV[2] ~= '' and not seenRelease then candidates[#candidates + 1] = {ARGV[2], now} end
      for c = 1, #candidates do
        local p, beat = candidates[c][1], candidates[c][2]
        local release = (p == ARGV[2])
        if release or redis.call('EXISTS', p .. ':alive') == 0 then
          local n = redis.call('LLEN', p)
          if n > 0 then consumers = consumers + 1 end
          for j = 1, n do
            local e = redis.call('LMOVE', p, KEYS[1], 'RIGHT', 'LEFT')
            local _, id = element_header(e)
            if id then redis.call('HINCRBY', KEYS[3], id, 1) end
            returned = returned + 1
          end
          if release then
            redis.call('HDEL', KEYS[2], p)
            redis.call('DEL', p .. ':alive')
          elseif now - beat > tonumber(ARGV[1]) then
            redis.call('HDEL', KEYS[2], p)
          end
        end
      end
      return {returned, consumers}""");

  /** The relay's own script: the lowest ID a list or its processing lists hold (kept in the core module). */
  private static final LuaScript LOWEST_HELD = ListScripts.resource("/dev/handoff/core/list-watermark.lua");

  // KEYS: list, registry. Reply: LLEN of the list, then per registered processing list: key, length, alive, lowest ID
  // ('' when empty). One script, so one atomic snapshot: an element moving between the list and a processing list (a
  // take, a reaper's return) is counted once, never zero times.
  private static final LuaScript HOLDERS = ListScripts.of("list-holders", """
      local out = {redis.call('LLEN', KEYS[1])}
      local entries = redis.call('HKEYS', KEYS[2])
      for i = 1, #entries do
        local p = entries[i]
        local best, bestMs, bestSeq = '', nil, nil
        for _, e in ipairs(redis.call('LRANGE', p, 0, -1)) do
          local id, _, ms, seq = element_header(e)
          if id and (bestMs == nil or ms < bestMs or (ms == bestMs and seq < bestSeq)) then
            best, bestMs, bestSeq = id, ms, seq
          end
        end
        out[#out + 1] = {p, redis.call('LLEN', p), redis.call('EXISTS', p .. ':alive'), best}
      end
      return out""");

  /** The scripts a running list consumer runs (workers, heartbeat, reaper, inbox purge), for the ACL check. */
  static List<LuaScript> consumerScripts() {
    return List.of(TAKE, ACK, COUNT_FAILED, HEARTBEAT, REAP, LOWEST_HELD);
  }

  /** The scripts of a list consumer's status and inbox purge, the operator's, for the ACL check. */
  static List<LuaScript> statusScripts() {
    return List.of(HOLDERS, LOWEST_HELD);
  }

  private final UnifiedJedis commands;
  private final UnifiedJedis readers;

  public ListQueues(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig base, int workers, Duration block,
      Duration poolWait) {
    // Workers take and acknowledge, the housekeeping thread beats and reaps, status calls come from the application.
    this.commands = RedisConnections.commands(server, cluster, base, workers + 3, poolWait);
    this.readers = RedisConnections.blockingReaders(server, cluster, base, workers, block, poolWait);
  }

  /** Moves up to {@code count} elements from the head of {@code list} into {@code processing}, without blocking. */
  public List<Taken> take(String list, String processing, int count) {
    List<?> reply = (List<?>) run(TAKE, commands, List.of(list, processing, ListFormat.deliveriesKey(list)),
        List.of(bytes(Integer.toString(count))));
    List<Taken> out = new ArrayList<>(reply.size() / 2);
    for (int i = 0; i + 1 < reply.size(); i += 2) {
      out.add(new Taken((byte[]) reply.get(i), ((Number) reply.get(i + 1)).longValue()));
    }
    return out;
  }

  /** {@code BLMOVE list processing LEFT RIGHT timeout} on a reader connection; {@code null} on timeout. */
  public Taken blockingTake(String list, String processing, Duration timeout) {
    byte[] element;
    try {
      element = AclErrors.call("BLMOVE", List.of(list, processing), () -> readers.blmove(bytes(list),
          bytes(processing), ListDirection.LEFT, ListDirection.RIGHT, Math.max(0.01, timeout.toMillis() / 1000.0)));
    } catch (JedisDataException e) {
      if (e.getMessage() == null || !e.getMessage().startsWith("OOM ")) {
        throw e;
      }
      // A full Redis refuses BLMOVE (it may need memory) but runs the take script, which moves the same way.
      return takeWhenFull(list, processing, timeout);
    }
    if (element == null) {
      return null;
    }
    String[] header = ListFormat.header(element);
    String deliveries = ListFormat.deliveriesKey(list);
    String count = header == null ? null
        : AclErrors.call("HGET", List.of(deliveries), () -> commands.hget(deliveries, header[1]));
    return new Taken(element, count == null ? 0 : Long.parseLong(count));
  }

  private Taken takeWhenFull(String list, String processing, Duration timeout) {
    List<Taken> taken = take(list, processing, 1);
    if (!taken.isEmpty()) {
      return taken.get(0);
    }
    try {
      Thread.sleep(timeout.toMillis()); // nothing to take: wait as the blocking read would have
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
    return null;
  }

  /** Everything in a processing list, oldest first (a restarted consumer's own unfinished work). */
  public List<byte[]> held(String processing) {
    return AclErrors.call("LRANGE", List.of(processing), () -> commands.lrange(bytes(processing), 0, -1));
  }

  /** LREM count 1 of each element; returns how many were removed. {@code messageIds} may hold nulls. */
  public long ack(String list, String processing, List<byte[]> elements, List<String> messageIds) {
    if (elements.isEmpty()) {
      return 0;
    }
    return RedisConnections.onceMoreOnBrokenConnection(commands, () -> ((Number) run(ACK, commands,
        List.of(processing, ListFormat.deliveriesKey(list)), pairs(elements, messageIds))).longValue());
  }

  /** Counts one delivery without outcome per element still held; -1 for one no longer held. */
  public long[] countFailed(String list, String processing, List<byte[]> elements, List<String> messageIds) {
    List<?> reply = (List<?>) run(COUNT_FAILED, commands, List.of(processing, ListFormat.deliveriesKey(list)),
        pairs(elements, messageIds));
    long[] out = new long[reply.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ((Number) reply.get(i)).longValue();
    }
    return out;
  }

  /** Renews the heartbeat of one processing list and (re-)registers it. */
  public void heartbeat(String list, String processing, Duration ttl) {
    run(HEARTBEAT, commands, List.of(ListFormat.heartbeatKey(processing), ListFormat.consumersKey(list)),
        List.of(bytes(processing), bytes(Long.toString(ttl.toMillis()))));
  }

  /** Returns the elements of dead consumers (and of {@code release}, if not null) to the head of the list. */
  public Reaped reap(String list, Duration forgetAfter, String release) {
    List<?> reply = (List<?>) run(REAP, commands,
        List.of(list, ListFormat.consumersKey(list), ListFormat.deliveriesKey(list)),
        List.of(bytes(Long.toString(Math.max(1, forgetAfter.toSeconds()))), bytes(release == null ? "" : release)));
    return new Reaped(((Number) reply.get(0)).longValue(), ((Number) reply.get(1)).longValue());
  }

  public long length(String list) {
    return AclErrors.call("LLEN", List.of(list), () -> commands.llen(list));
  }

  /** The registered processing lists of {@code list}. */
  /**
   * The lowest stream ID that {@code list} or its processing lists hold, or just above the last one the relay
   * pushed when they hold nothing; {@code null} when the relay's bookkeeping for the list is gone (nothing was
   * ever pushed, or Redis lost it).
   */
  public long[] lowestHeld(String list) {
    List<?> reply = (List<?>) run(LOWEST_HELD, commands,
        List.of(list, ListFormat.relayKey(list), ListFormat.consumersKey(list)), List.of());
    String id = text(reply.get(0));
    if (id.isEmpty()) {
      return null;
    }
    int dash = id.indexOf('-');
    return new long[] {Long.parseLong(id.substring(0, dash)), Long.parseLong(id.substring(dash + 1))};
  }

  /** What one shard holds at one instant: the list's length and every registered processing list. */
  public record Snapshot(long waiting, List<Holder> holders) {}

  /** The list and its processing lists, read in one script: an atomic snapshot. */
  public Snapshot snapshot(String list) {
    List<?> reply = (List<?>) run(HOLDERS, commands, List.of(list, ListFormat.consumersKey(list)), List.of());
    List<Holder> out = new ArrayList<>(reply.size() - 1);
    for (Object o : reply.subList(1, reply.size())) {
      List<?> h = (List<?>) o;
      String oldest = text(h.get(3));
      out.add(new Holder(text(h.get(0)), ((Number) h.get(1)).longValue(), ((Number) h.get(2)).longValue() == 1,
          oldest.isEmpty() ? null : oldest));
    }
    return new Snapshot(((Number) reply.get(0)).longValue(), out);
  }

  /** The relay's hash: capacity, last pushed ID. */
  public Map<String, String> relayState(String list) {
    String relay = ListFormat.relayKey(list);
    List<String> values = AclErrors.call("HMGET", List.of(relay),
        () -> commands.hmget(relay, "capacity", "last_ms", "last_seq"));
    Map<String, String> out = new LinkedHashMap<>();
    out.put("capacity", values.get(0));
    out.put("last", values.get(1) == null ? null : values.get(1) + "-" + values.get(2));
    return out;
  }

  /** After a connection failure: see {@link RedisConnections#dropIdle}. */
  public void dropIdleConnections() {
    RedisConnections.dropIdle(commands, readers);
  }

  /** Whether {@code key} exists. */
  boolean exists(String key) {
    return commands.exists(key);
  }

  @Override
  public void close() {
    commands.close();
    readers.close();
  }

  private static List<byte[]> pairs(List<byte[]> elements, List<String> messageIds) {
    List<byte[]> args = new ArrayList<>(elements.size() * 2);
    for (int i = 0; i < elements.size(); i++) {
      args.add(elements.get(i));
      String id = messageIds.get(i);
      args.add(bytes(id == null ? "" : id));
    }
    return args;
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(Object o) {
    return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
  }

  private static Object run(LuaScript script, UnifiedJedis redis, List<String> keys, List<byte[]> args) {
    List<byte[]> rawKeys = new ArrayList<>(keys.size());
    keys.forEach(k -> rawKeys.add(bytes(k)));
    return script.run(redis, rawKeys, args);
  }
}
