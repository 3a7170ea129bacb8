package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboxPurgeRefusedException;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.LuaScript;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * What a stream consumer reads of its streams without taking part in the group: the status of each stream
 * (length, first and last entry, backlog, pending) and the floor below which the streams hold nothing, for the
 * inbox purge's rule. Every scan is bounded by the caller's limit.
 *
 * <p>Thread-safe: it keeps no state; the connections are {@link RedisGroups}'s.
 */
final class StreamInspector {

  // Counts up to ARGV[2] entries after ARGV[1] server-side, so only the count and the last ID cross the wire. One
  // call is one page: a long scan is many short scripts, never one that holds Redis for the whole count.
  private static final LuaScript COUNT_PAGE = LuaScript.of("status-count-page", """
      local r = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', tonumber(ARGV[2]))
      if #r == 0 then return {0, ARGV[1]} end
      return {#r, r[#r][1]}""");
  private static final int COUNT_PAGE_SIZE = 500;
  /** Nothing pending: the stream or the group does not exist. */
  private static final ConsumerStatus.StreamStatus.Pending NOTHING_PENDING =
      new ConsumerStatus.StreamStatus.Pending(0, null, null, Map.of(), new TreeMap<>());

  /** The scripts of a stream consumer's status, the operator's, for the ACL check. */
  static List<LuaScript> scripts() {
    return List.of(COUNT_PAGE);
  }

  private final UnifiedJedis commands;
  private final List<String> streamKeys;
  private final String groupName;

  StreamInspector(RedisGroups redis, List<String> streamKeys, String groupName) {
    this.commands = redis.commands();
    this.streamKeys = streamKeys;
    this.groupName = groupName;
  }

  /** Each stream's status, shard 0 first, at {@code nowMillis}; scans stop at {@code scanLimit} entries. */
  List<ConsumerStatus.StreamStatus> streams(long nowMillis, int scanLimit) {
    List<ConsumerStatus.StreamStatus> streams = new ArrayList<>();
    for (String key : streamKeys) {
      if (!exists(key)) {
        streams.add(new ConsumerStatus.StreamStatus(key, false, false, 0, null, null, null, 0, true, NOTHING_PENDING));
        continue;
      }
      String lastDelivered = lastDeliveredId(key);
      long length = length(key);
      String first = firstEntryId(key);
      String last = lastEntryId(key);
      if (lastDelivered == null) {
        // Without a group nothing was delivered: every retained entry is backlog.
        streams.add(new ConsumerStatus.StreamStatus(key, true, false, length, first, last, null, length, true,
            NOTHING_PENDING));
        continue;
      }
      long[] backlog = countAfter(key, lastDelivered, scanLimit);
      PendingSummary pending = pendingSummary(key);
      Duration age = pending.minId() == null ? null
          : Duration.ofMillis(Math.max(0, nowMillis - Long.parseLong(pending.minId().substring(0,
              pending.minId().indexOf('-')))));
      streams.add(new ConsumerStatus.StreamStatus(key, true, true, length, first, last, lastDelivered, backlog[0],
          backlog[1] == 0, new ConsumerStatus.StreamStatus.Pending(pending.total(), pending.minId(), age,
              pending.consumers(), pending.total() == 0 ? new TreeMap<>() : deliveryHistogram(key, scanLimit))));
    }
    return streams;
  }

  /**
   * The oldest entry the topic's streams retain, or just above the top of an empty one, as {ms, seq}.
   *
   * @throws InboxPurgeRefusedException when a stream does not exist: Redis may have lost it
   */
  long[] floor() {
    long[] floor = {Long.MAX_VALUE, Long.MAX_VALUE};
    for (String key : streamKeys) {
      if (!exists(key)) {
        throw new InboxPurgeRefusedException("inbox purge of consumer group '" + groupName
            + "' refused: stream '" + key + "' does not exist, so Redis may have lost it and the relay may"
            + " publish its messages again; their markers must stay", -1);
      }
      String first = firstEntryId(key);
      long[] candidate;
      if (first != null) {
        candidate = parse(first);
      } else {
        long[] top = parse(lastGeneratedId(key));
        candidate = new long[] {top[0], top[1] + 1};
      }
      if (compare(candidate, floor) < 0) {
        floor = candidate;
      }
    }
    return floor;
  }

  boolean exists(String streamKey) {
    return AclErrors.call("EXISTS", List.of(streamKey), () -> commands.exists(streamKey));
  }

  /** The oldest retained entry's ID, or {@code null} when the stream is empty or missing. */
  String firstEntryId(String streamKey) {
    List<Object> reply = AclErrors.call("XRANGE", List.of(streamKey),
        () -> commands.xrange(StreamReplies.bytes(streamKey), StreamReplies.bytes("-"), StreamReplies.bytes("+"), 1));
    return reply.isEmpty() ? null : StreamReplies.text(((List<?>) reply.get(0)).get(0));
  }

  String lastEntryId(String streamKey) {
    List<Object> reply = AclErrors.call("XREVRANGE", List.of(streamKey),
        () -> commands.xrevrange(StreamReplies.bytes(streamKey), StreamReplies.bytes("+"), StreamReplies.bytes("-"),
            1));
    return reply.isEmpty() ? null : StreamReplies.text(((List<?>) reply.get(0)).get(0));
  }

  /** The stream's last-generated ID (the top, even when the entries were trimmed away). */
  String lastGeneratedId(String streamKey) {
    return AclErrors.call("XINFO|STREAM", List.of(streamKey), () -> commands.xinfoStream(streamKey))
        .getLastGeneratedId().toString();
  }

  long length(String streamKey) {
    return AclErrors.call("XLEN", List.of(streamKey), () -> commands.xlen(streamKey));
  }

  /** The group's last-delivered ID, or {@code null} when the group does not exist. */
  String lastDeliveredId(String streamKey) {
    if (!exists(streamKey)) {
      return null;
    }
    for (StreamGroupInfo info : AclErrors.call("XINFO|GROUPS", List.of(streamKey),
        () -> commands.xinfoGroups(streamKey))) {
      if (info.getName().equals(groupName)) {
        return info.getLastDeliveredId().toString();
      }
    }
    return null;
  }

  /** {@code [count, more]}: entries after {@code afterId} up to {@code limit}, and whether there are more. */
  long[] countAfter(String streamKey, String afterId, int limit) {
    long counted = 0;
    String cursor = afterId;
    while (counted < limit) {
      int want = (int) Math.min(COUNT_PAGE_SIZE, limit - counted);
      List<?> page = countPage(streamKey, cursor, want);
      long n = ((Number) page.get(0)).longValue();
      counted += n;
      if (n < want) {
        return new long[] {counted, 0};
      }
      cursor = StreamReplies.text(page.get(1));
    }
    return new long[] {counted, ((Number) countPage(streamKey, cursor, 1).get(0)).longValue()};
  }

  private List<?> countPage(String streamKey, String afterId, int count) {
    return (List<?>) COUNT_PAGE.runText(commands, List.of(streamKey), List.of(afterId, Integer.toString(count)));
  }

  /** Pending summary: total, min ID and pending per consumer. */
  record PendingSummary(long total, String minId, Map<String, Long> consumers) {}

  PendingSummary pendingSummary(String streamKey) {
    var summary = AclErrors.call("XPENDING", List.of(streamKey), () -> commands.xpending(streamKey, groupName));
    Map<String, Long> consumers = summary.getConsumerMessageCount() == null ? Map.of()
        : new HashMap<>(summary.getConsumerMessageCount());
    return new PendingSummary(summary.getTotal(),
        summary.getMinId() == null ? null : summary.getMinId().toString(), consumers);
  }

  /** Delivery count to number of pending entries, scanning at most {@code limit} entries. */
  TreeMap<Long, Long> deliveryHistogram(String streamKey, int limit) {
    TreeMap<Long, Long> histogram = new TreeMap<>();
    String start = "-";
    int seen = 0;
    while (seen < limit) {
      int page = Math.min(1000, limit - seen);
      String from = start;
      List<StreamPendingEntry> entries = AclErrors.call("XPENDING", List.of(streamKey),
          () -> commands.xpending(streamKey, groupName, XPendingParams.xPendingParams(from, "+", page)));
      for (StreamPendingEntry e : entries) {
        histogram.merge(e.getDeliveredTimes(), 1L, Long::sum);
      }
      seen += entries.size();
      if (entries.size() < page) {
        break;
      }
      start = "(" + entries.get(entries.size() - 1).getID();
    }
    return histogram;
  }

  private static long[] parse(String id) {
    int dash = id.indexOf('-');
    return new long[] {Long.parseLong(id.substring(0, dash)), Long.parseLong(id.substring(dash + 1))};
  }

  private static int compare(long[] a, long[] b) {
    int c = Long.compare(a[0], b[0]);
    return c != 0 ? c : Long.compare(a[1], b[1]);
  }
}
