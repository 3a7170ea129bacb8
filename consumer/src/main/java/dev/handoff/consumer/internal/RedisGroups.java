package dev.handoff.consumer.internal;

import static dev.handoff.consumer.internal.StreamReplies.bytes;
import static dev.handoff.consumer.internal.StreamReplies.entries;
import static dev.handoff.consumer.internal.StreamReplies.fields;
import static dev.handoff.consumer.internal.StreamReplies.text;

import dev.handoff.core.internal.AclErrors;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.XAutoClaimParams;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * Every Redis command the stream consumer's workers send; with {@link StreamInspector} (the reads for status and
 * the inbox purge), the only classes that talk to Jedis. Two clients: one pool for
 * blocking reads, sized one connection per worker so a read never waits for a connection and never holds one
 * that other commands need, and one pool for everything else, with a finite wait. Both speak RESP2 so the raw
 * replies keep their shape ({@link StreamReplies} decodes them).
 *
 * <p>The group and the reads are here; the steps that depend on an entry's owner are {@link PendingEntryScripts}',
 * the acknowledgements {@link StreamAcknowledger}'s, both on the pool for non-blocking commands.
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

  /** On a cluster a blocking read covers one shard, so it returns this soon to look at the others again. */
  private static final Duration CLUSTER_BLOCK = Duration.ofMillis(100);

  private final UnifiedJedis commands;
  private final UnifiedJedis readers;
  private final boolean cluster;
  private final byte[] group;
  private final String groupName;
  private final PendingEntryScripts pending;
  private final StreamAcknowledger acknowledger;

  public RedisGroups(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig base, String group, int workers,
      Duration block, Duration poolWait) {
    this.groupName = group;
    this.group = bytes(group);
    this.cluster = !cluster.isEmpty();
    // Workers ack and run scripts, the lease keeper renews, status and admin calls come from the application.
    this.commands = RedisConnections.commands(server, cluster, base, workers + 3, poolWait);
    this.readers = RedisConnections.blockingReaders(server, cluster, base, workers, block, poolWait);
    this.pending = new PendingEntryScripts(commands, group);
    this.acknowledger = new StreamAcknowledger(commands, group);
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

  /** How many entries of the stream are pending in the group, whoever holds them ({@code XPENDING} summary). */
  public long pendingCount(String streamKey) {
    try {
      return commands.xpending(streamKey, groupName).getTotal();
    } catch (JedisDataException e) {
      throw translate(AclErrors.direct(e, "XPENDING", List.of(streamKey)), streamKey);
    }
  }

  /** Delivery count of each ID if {@code consumer} owns it, else -1; see {@link PendingEntryScripts}. */
  public long[] deliveryCounts(String streamKey, String consumer, List<String> ids) {
    return pending.deliveryCounts(streamKey, consumer, ids);
  }

  /** Resets the idle time of the entries {@code consumer} still owns; returns the IDs it no longer owns. */
  public List<String> renew(String streamKey, String consumer, List<String> ids) {
    return pending.renew(streamKey, consumer, ids);
  }

  /** Sets each owned entry's idle time to the given milliseconds; returns how many it still owned. */
  public long defer(String streamKey, String consumer, Map<String, Long> idleMillisById) {
    return pending.defer(streamKey, consumer, idleMillisById);
  }

  /** Deletes {@code consumer} from the group if it has nothing pending; -1 if it still has. */
  public long deleteConsumerIfIdle(String streamKey, String consumer) {
    return pending.deleteConsumerIfIdle(streamKey, consumer);
  }

  /**
   * Acknowledges the entries of several streams in one round trip; returns how many Redis acknowledged. See
   * {@link StreamAcknowledger}.
   */
  public long ackAll(Map<String, List<String>> idsByStream) {
    return acknowledger.ackAll(idsByStream);
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

  static RuntimeException translate(JedisDataException e, String where) {
    String message = e.getMessage();
    if (message != null && message.contains("NOGROUP")) {
      return new GroupMissingException("consumer group is missing on " + where + ": " + message, e);
    }
    return e;
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
