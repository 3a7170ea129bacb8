package dev.handoff.consumer.internal;

import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.LuaScript;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.Response;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.XAutoClaimParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntryBinary;

/**
 * Every Redis command the stream consumer's workers send; with {@link StreamInspector} (the reads for status and
 * the inbox purge), the only classes that talk to Jedis. Two clients: one pool for
 * blocking reads, sized one connection per worker so a read never waits for a connection and never holds one
 * that other commands need, and one pool for everything else, with a finite wait. Both speak RESP2 so the raw
 * replies parsed here keep their shape.
 *
 * <p>Thread-safe.
 */
public final class RedisGroups implements AutoCloseable {

  /** Raised for {@code NOGROUP}: the stream or its group is gone (Redis restarted without persistence, say). */
  public static final class GroupMissingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GroupMissingException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** A stream entry as read; {@code fields} is {@code null} when the entry was trimmed or deleted. */
  public record RawEntry(String streamKey, String id, Map<byte[], byte[]> fields) {}

  /** One {@code XAUTOCLAIM} step: the cursor to continue from ({@code 0-0} = the pass is complete). */
  public record AutoClaim(String nextCursor, List<RawEntry> claimed, List<String> deletedIds) {}

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

  // Counts up to ARGV[2] entries after ARGV[1] server-side, so only the count and the last ID cross the wire. One
  // call is one page: a long scan is many short scripts, never one that holds Redis for the whole count.
  /** On a cluster a blocking read covers one shard, so it returns this soon to look at the others again. */
  private static final Duration CLUSTER_BLOCK = Duration.ofMillis(100);

  private final UnifiedJedis commands;
  private final UnifiedJedis readers;
  private final boolean cluster;
  private final byte[] group;
  private final String groupName;

  public RedisGroups(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig base, String group, int workers,
      Duration block, Duration poolWait) {
    this.groupName = group;
    this.group = bytes(group);
    this.cluster = !cluster.isEmpty();
    // Workers ack and run scripts, the lease keeper renews, status and admin calls come from the application.
    this.commands = RedisConnections.commands(server, cluster, base, workers + 3, poolWait);
    this.readers = RedisConnections.blockingReaders(server, cluster, base, workers, block, poolWait);
  }

  /**
   * Creates the group at {@code 0} (or {@code $}) with MKSTREAM. An existing group is success.
   *
   * @return whether it was created now
   */
  public boolean ensureGroup(String streamKey, boolean fromBeginning) {
    try {
      commands.xgroupCreate(streamKey, groupName,
          fromBeginning ? new StreamEntryID(0, 0) : StreamEntryID.XGROUP_LAST_ENTRY, true);
      return true;
    } catch (JedisDataException e) {
      if (e.getMessage() != null && e.getMessage().startsWith("BUSYGROUP")) {
        return false;
      }
      // A full Redis refuses XGROUP CREATE before it looks whether the group exists; reading and acknowledging
      // still work, and a consumer that can read can finish entries and so free memory.
      if (e.getMessage() != null && e.getMessage().startsWith("OOM ") && groupExists(streamKey)) {
        return false;
      }
      throw AclErrors.direct(e, "XGROUP|CREATE", List.of(streamKey));
    }
  }

  private boolean groupExists(String streamKey) {
    try {
      return commands.xinfoGroups(streamKey).stream().anyMatch(g -> g.getName().equals(groupName));
    } catch (JedisDataException e) {
      return false; // no such stream: the group does not exist either
    }
  }

  /**
   * {@code XREADGROUP ... BLOCK block COUNT count STREAMS keys > ...} on a reader connection. On a cluster, where one
   * command cannot span slots, each stream is read on its own without blocking, and only if none had anything the
   * first is read blocking, for at most {@link #CLUSTER_BLOCK}.
   */
  public List<RawEntry> readNew(String consumer, List<String> streamKeys, int count, Duration block) {
    if (!cluster || streamKeys.size() == 1) {
      return readNewAt(consumer, streamKeys, count, block);
    }
    List<RawEntry> all = new ArrayList<>();
    for (String key : streamKeys) {
      all.addAll(readNewAt(consumer, List.of(key), count, null));
    }
    if (all.isEmpty() && block != null) {
      all.addAll(readNewAt(consumer, List.of(streamKeys.get(0)), count,
          block.compareTo(CLUSTER_BLOCK) < 0 ? block : CLUSTER_BLOCK));
    }
    return all;
  }

  private List<RawEntry> readNewAt(String consumer, List<String> streamKeys, int count, Duration block) {
    XReadGroupParams params = XReadGroupParams.xReadGroupParams().count(count);
    if (block != null) {
      params.block((int) Math.max(1, block.toMillis()));
    }
    Map<byte[], StreamEntryID> streams = new LinkedHashMap<>();
    for (String key : streamKeys) {
      streams.put(bytes(key), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY);
    }
    UnifiedJedis client = block != null ? readers : commands;
    try {
      return entries(client.xreadGroupBinary(group, bytes(consumer), params, streams));
    } catch (JedisDataException e) {
      throw translate(AclErrors.direct(e, "XREADGROUP", streamKeys), streamKeys.toString());
    }
  }

  /** {@code XREADGROUP ... STREAMS key <afterId>}: this consumer's own pending entries after {@code afterId}. */
  public List<RawEntry> readOwnPending(String consumer, String streamKey, String afterId, int count) {
    XReadGroupParams params = XReadGroupParams.xReadGroupParams().count(count);
    try {
      return entries(commands.xreadGroupBinary(group, bytes(consumer), params,
          Map.of(bytes(streamKey), new StreamEntryID(afterId))));
    } catch (JedisDataException e) {
      throw translate(AclErrors.direct(e, "XREADGROUP", List.of(streamKey)), streamKey);
    }
  }

  /** One {@code XAUTOCLAIM} step, raw form, so the third element (IDs purged because deleted) is kept. */
  public AutoClaim autoClaim(String streamKey, String consumer, long minIdleMillis, String cursor, int count) {
    List<Object> reply;
    try {
      reply = commands.xautoclaim(bytes(streamKey), group, bytes(consumer), minIdleMillis, bytes(cursor),
          XAutoClaimParams.xAutoClaimParams().count(count));
    } catch (JedisDataException e) {
      throw translate(AclErrors.direct(e, "XAUTOCLAIM", List.of(streamKey)), streamKey);
    }
    String next = text(reply.get(0));
    List<RawEntry> claimed = new ArrayList<>();
    for (Object o : (List<?>) reply.get(1)) {
      List<?> entry = (List<?>) o;
      claimed.add(new RawEntry(streamKey, text(entry.get(0)), fields((List<?>) entry.get(1))));
    }
    List<String> deleted = new ArrayList<>();
    if (reply.size() > 2 && reply.get(2) != null) {
      for (Object o : (List<?>) reply.get(2)) {
        deleted.add(text(o));
      }
    }
    return new AutoClaim(next, claimed, deleted);
  }

  /** Delivery count of each ID if {@code consumer} owns it, else -1. */
  public long[] deliveryCounts(String streamKey, String consumer, List<String> ids) {
    List<?> reply = (List<?>) eval(COUNTS, streamKey, consumer, ids);
    long[] out = new long[ids.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ((Number) reply.get(i)).longValue();
    }
    return out;
  }

  /** Resets the idle time of the entries {@code consumer} still owns; returns the IDs it no longer owns. */
  public List<String> renew(String streamKey, String consumer, List<String> ids) {
    List<?> reply = (List<?>) eval(RENEW, streamKey, consumer, ids);
    List<String> lost = new ArrayList<>(reply.size());
    for (Object o : reply) {
      lost.add(text(o));
    }
    return lost;
  }

  /** Sets each owned entry's idle time to the given milliseconds; returns how many it still owned. */
  public long defer(String streamKey, String consumer, Map<String, Long> idleMillisById) {
    List<String> args = new ArrayList<>(idleMillisById.size() * 2);
    idleMillisById.forEach((id, idle) -> {
      args.add(id);
      args.add(Long.toString(idle));
    });
    return ((Number) eval(DEFER, streamKey, consumer, args)).longValue();
  }

  /** Deletes {@code consumer} from the group if it has nothing pending; -1 if it still has. */
  public long deleteConsumerIfIdle(String streamKey, String consumer) {
    return ((Number) eval(DELETE_IDLE_CONSUMER, streamKey, consumer, List.of())).longValue();
  }

  public long ack(String streamKey, List<String> ids) {
    if (ids.isEmpty()) {
      return 0;
    }
    try {
      return RedisConnections.onceMoreOnBrokenConnection(commands,
          () -> commands.xack(bytes(streamKey), group, rawIds(ids)));
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "XACK", List.of(streamKey));
    }
  }

  /** Acknowledges the entries of several streams in one round trip; returns how many Redis acknowledged. */
  public long ackAll(Map<String, List<String>> idsByStream) {
    if (idsByStream.size() <= 1) {
      long acked = 0;
      for (Map.Entry<String, List<String>> e : idsByStream.entrySet()) {
        acked += ack(e.getKey(), e.getValue());
      }
      return acked;
    }
    try {
      return ackPipelined(idsByStream);
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "XACK", List.copyOf(idsByStream.keySet()));
    }
  }

  /**
   * A cluster's pipeline logs a node's connection failure and leaves that node's replies unset instead of throwing
   * (Jedis's {@code MultiNodePipelineBase.sync}); an unset reply is therefore that outage, and is thrown as one,
   * naming the streams whose acknowledgement may not have happened.
   */
  private long ackPipelined(Map<String, List<String>> idsByStream) {
    return RedisConnections.onceMoreOnBrokenConnection(commands, () -> {
      List<String> keys = new ArrayList<>(idsByStream.size());
      List<Response<Long>> replies = new ArrayList<>(idsByStream.size());
      try (AbstractPipeline p = commands.pipelined()) {
        idsByStream.forEach((key, ids) -> {
          if (!ids.isEmpty()) {
            keys.add(key);
            replies.add(p.xack(bytes(key), group, rawIds(ids)));
          }
        });
        p.sync();
      }
      long acked = 0;
      List<String> unanswered = new ArrayList<>();
      for (int i = 0; i < replies.size(); i++) {
        try {
          acked += replies.get(i).get();
        } catch (IllegalStateException noReply) {
          unanswered.add(keys.get(i));
        }
      }
      if (!unanswered.isEmpty()) {
        throw new JedisConnectionException("no reply to XACK on " + unanswered + " of group '" + groupName
            + "': the connection to their node failed during the pipeline");
      }
      return acked;
    });
  }

  private static byte[][] rawIds(List<String> ids) {
    byte[][] raw = new byte[ids.size()][];
    for (int i = 0; i < raw.length; i++) {
      raw[i] = bytes(ids.get(i));
    }
    return raw;
  }

  /** Up to {@code count} entries after {@code afterId} (exclusive), for replays. */
  public List<RawEntry> range(String streamKey, String afterId, int count) {
    List<Object> reply;
    try {
      reply = commands.xrange(bytes(streamKey), bytes("(" + afterId), bytes("+"), count);
    } catch (JedisDataException e) {
      throw AclErrors.direct(e, "XRANGE", List.of(streamKey));
    }
    List<RawEntry> out = new ArrayList<>(reply.size());
    for (Object o : reply) {
      List<?> entry = (List<?>) o;
      out.add(new RawEntry(streamKey, text(entry.get(0)), fields((List<?>) entry.get(1))));
    }
    return out;
  }

  private Object eval(LuaScript script, String streamKey, String consumer, List<String> rest) {
    List<String> args = new ArrayList<>(rest.size() + 2);
    args.add(groupName);
    args.add(consumer);
    args.addAll(rest);
    try {
      return script.runText(commands, List.of(streamKey), args);
    } catch (JedisDataException e) {
      throw translate(e, streamKey);
    }
  }

  static RuntimeException translate(JedisDataException e, String where) {
    String message = e.getMessage();
    if (message != null && message.contains("NOGROUP")) {
      return new GroupMissingException("consumer group is missing on " + where + ": " + message, e);
    }
    return e;
  }

  private static List<RawEntry> entries(List<Map.Entry<byte[], List<StreamEntryBinary>>> reply) {
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

  private static Map<byte[], byte[]> fields(List<?> flat) {
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

  /** The pool for non-blocking commands, shared with {@link StreamInspector}. */
  UnifiedJedis commands() {
    return commands;
  }

  /** The group this client reads for. */
  String groupName() {
    return groupName;
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
    try {
      readers.close();
    } finally {
      commands.close();
    }
  }
}
