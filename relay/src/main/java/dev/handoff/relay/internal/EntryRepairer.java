package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.LuaScript;
import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.RepairReport.ShardRepair;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * Finds the entries of one shard's stream that some group still needs and that the stream no longer holds (deleted
 * with XDEL, trimmed by hand, lost in a partial loss) and makes their outbox rows unpublished again, so that the
 * relay owning the shard sends them again through its fenced path. It never writes the stream: only the lease holder
 * does, and Redis would refuse an ID below the stream's top anyway, so the rows come back at the end of the stream
 * with new IDs (their key's later messages then come before them).
 *
 * <p>"Still needs": for each group, its pending entries and everything after its last-delivered ID. So the check
 * reads (a) the published rows above the lowest last-delivered ID over the groups (with no group, above
 * {@code noGroupFloor}) whose entry is absent, and (b) each group's pending entries whose body is absent, matched to
 * their rows by stream ID; a gone pending entry whose row is found is acknowledged in its group after the reset
 * committed (so that its consumers do not dead-letter it as lost: the message comes again under its new ID, and the
 * inbox makes it harmless to a group that processed it). One whose row the outbox retention purged is reported
 * unrecoverable and left pending.
 *
 * <p>Costs: XPENDING and the presence checks go in pages of {@value #PAGE}; the outbox is read along its primary key
 * in pages of {@value #PAGE} rows of the shard, only the columns compared. Not thread-safe; one call at a time.
 */
final class EntryRepairer {

  static final int PAGE = 1000;

  private static final LuaScript GONE = LuaScript.resource("/dev/handoff/relay/gone.lua");

  private final UnifiedJedis redis;
  private final String schema;
  private final RepairQueries queries;

  EntryRepairer(UnifiedJedis redis, String schema) {
    this.redis = redis;
    this.schema = schema;
    this.queries = new RepairQueries(schema);
  }

  RepairQueries queries() {
    return queries;
  }

  /** XINFO STREAM's {@code max-deleted-entry-id}, or null when the stream does not exist. */
  StreamId maxDeleted(String streamKey) {
    List<?> reply = gone(streamKey, "probe", "", List.of());
    return ((Long) reply.get(0)) == 0 ? null : StreamId.parse(text(reply.get(1)));
  }

  /**
   * Checks one shard and, unless {@code dryRun}, resets and acknowledges what it found.
   *
   * @param progress told one line per {@value #PAGE} pages of outbox rows read
   */
  ShardRepair repair(Connection c, ShardId shard, String streamKey, StreamId noGroupFloor, boolean dryRun,
      Consumer<String> progress) throws SQLException {
    List<?> first = gone(streamKey, "needed", noGroupFloor.toString(), List.of());
    if ((Long) first.get(0) == 0) {
      return new ShardRepair(shard, streamKey, "the stream does not exist (a lost stream is republished by the relay"
          + " owning the shard, with its original IDs)", "", 0, List.of(), Map.of(), List.of());
    }
    StreamId threshold = StreamId.parse(text(first.get(1)));
    TreeMap<StreamId, List<String>> gonePending = gonePending(streamKey);

    // One walk finds both: rows above the threshold (checked for presence a page at a time) and the rows of gone
    // pending entries, which may be below it.
    StreamId floor = new StreamId(threshold.ms(), threshold.seq() + 1);
    if (!gonePending.isEmpty()) {
      floor = StreamId.min(floor, gonePending.firstKey());
    }
    Map<Long, RepairQueries.PublishedRow> toReset = new LinkedHashMap<>();
    Map<StreamId, RepairQueries.PublishedRow> pendingRows = new TreeMap<>();
    List<RepairQueries.PublishedRow> candidates = new ArrayList<>();
    long checked = 0;
    long afterId = 0;
    int pages = 0;
    while (true) {
      List<RepairQueries.PublishedRow> page = queries.page(c, shard, afterId, floor, PAGE);
      for (RepairQueries.PublishedRow row : page) {
        if (gonePending.containsKey(row.streamId())) {
          pendingRows.put(row.streamId(), row);
          toReset.put(row.id(), row);
        } else if (row.streamId().compareTo(threshold) > 0) {
          candidates.add(row);
        }
      }
      checked += page.size();
      if (candidates.size() >= PAGE || page.size() < PAGE) {
        for (RepairQueries.PublishedRow row : absent(streamKey, noGroupFloor, candidates)) {
          toReset.put(row.id(), row);
        }
        candidates.clear();
      }
      if (page.size() < PAGE) {
        break;
      }
      afterId = page.get(page.size() - 1).id();
      if (++pages % PAGE == 0) {
        progress.accept(shard + ": " + checked + " published rows read, " + toReset.size() + " to reset so far");
      }
    }

    List<String> unrecoverable = new ArrayList<>();
    Map<String, List<StreamEntryID>> toAck = new TreeMap<>();
    gonePending.forEach((id, groups) -> {
      if (pendingRows.containsKey(id)) {
        for (String g : groups) {
          toAck.computeIfAbsent(g, k -> new ArrayList<>()).add(new StreamEntryID(id.ms(), id.seq()));
        }
      } else {
        unrecoverable.add(id.toString());
      }
    });
    List<Long> reset;
    if (dryRun) {
      reset = new ArrayList<>(new TreeSet<>(toReset.keySet()));
    } else {
      reset = toReset.isEmpty() ? List.of() : queries.reset(c, schema, shard, new ArrayList<>(toReset.values()));
      // After the commit: acknowledged before, a failed commit would leave the message neither pending nor coming.
      toAck.forEach((group, ids) -> {
        for (int i = 0; i < ids.size(); i += PAGE) {
          StreamEntryID[] chunk = ids.subList(i, Math.min(ids.size(), i + PAGE)).toArray(StreamEntryID[]::new);
          AclErrors.call("XACK", List.of(streamKey), () -> redis.xack(streamKey, group, chunk));
        }
      });
    }
    Map<String, Integer> acknowledged = new TreeMap<>();
    toAck.forEach((group, ids) -> acknowledged.put(group, ids.size()));
    return new ShardRepair(shard, streamKey, "", threshold.toString(), checked, reset, acknowledged, unrecoverable);
  }

  /** Per gone pending entry (its body absent from the stream), the groups that have it pending. */
  private TreeMap<StreamId, List<String>> gonePending(String streamKey) {
    TreeMap<StreamId, List<String>> out = new TreeMap<>();
    List<StreamGroupInfo> groups = AclErrors.call("XINFO|GROUPS", List.of(streamKey),
        () -> redis.xinfoGroups(streamKey));
    for (StreamGroupInfo group : groups) {
      String name = group.getName();
      String from = "-";
      while (true) {
        String start = from;
        List<StreamPendingEntry> page = AclErrors.call("XPENDING", List.of(streamKey),
            () -> redis.xpending(streamKey, name, XPendingParams.xPendingParams(start, "+", PAGE)));
        List<String> ids = new ArrayList<>(page.size());
        for (StreamPendingEntry e : page) {
          ids.add(e.getID().toString());
        }
        List<?> reply = ids.isEmpty() ? List.of() : gone(streamKey, "any", "", ids);
        for (int i = 2; i < reply.size(); i++) {
          out.computeIfAbsent(StreamId.parse(text(reply.get(i))), k -> new ArrayList<>()).add(name);
        }
        if (page.size() < PAGE) {
          break;
        }
        from = "(" + page.get(page.size() - 1).getID();
      }
    }
    return out;
  }

  /** The rows whose entry the stream does not hold, among those still above the groups' threshold. */
  private List<RepairQueries.PublishedRow> absent(String streamKey, StreamId noGroupFloor,
      List<RepairQueries.PublishedRow> rows) {
    if (rows.isEmpty()) {
      return List.of();
    }
    Map<String, RepairQueries.PublishedRow> byId = new LinkedHashMap<>();
    for (RepairQueries.PublishedRow row : rows) {
      byId.put(row.streamId().toString(), row);
    }
    List<?> reply = gone(streamKey, "needed", noGroupFloor.toString(), new ArrayList<>(byId.keySet()));
    List<RepairQueries.PublishedRow> out = new ArrayList<>();
    for (int i = 2; i < reply.size(); i++) {
      out.add(byId.get(text(reply.get(i))));
    }
    return out;
  }

  private List<?> gone(String streamKey, String mode, String floor, List<String> ids) {
    List<byte[]> args = new ArrayList<>(ids.size() + 2);
    args.add(RedisStreams.bytes(mode));
    args.add(RedisStreams.bytes(floor));
    for (String id : ids) {
      args.add(RedisStreams.bytes(id));
    }
    return (List<?>) RedisStreams.run(GONE, redis, List.of(RedisStreams.bytes(streamKey)), args);
  }

  private static String text(Object reply) {
    return reply instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(reply);
  }
}
