package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.admin.RewindPlan;
import dev.handoff.consumer.admin.RewindRefusedException;
import dev.handoff.consumer.admin.RewindTarget;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.LuaScript;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * Sets a consumer group back on every shard of a topic. Each shard is checked and set in one script
 * ({@code rewind.lua}), so a trim cannot slip in between; all shards are checked before any is set, and if a shard
 * refuses at the set (the relay trimmed it in the meantime) the shards already set are put back where they were.
 *
 * <p>Thread-safe: it keeps no state besides its immutable settings.
 */
public final class StreamRewinder {

  private static final Logger log = LoggerFactory.getLogger(StreamRewinder.class);
  private static final LuaScript REWIND = LuaScript.resource("/dev/handoff/consumer/rewind.lua");
  // A script because Jedis' XGROUP SETID takes no ENTRIESREAD, and the group's lag is put back too.
  private static final LuaScript PUT_BACK = LuaScript.of("admin-rewind-put-back", """
      if tonumber(ARGV[3]) >= 0 then
        return redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2], 'ENTRIESREAD', ARGV[3])
      end
      return redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2])""");

  private final UnifiedJedis redis;
  private final String keyPrefix;
  private final long countLimit;

  public StreamRewinder(UnifiedJedis redis, String keyPrefix, long countLimit) {
    this.redis = redis;
    this.keyPrefix = keyPrefix;
    this.countLimit = countLimit;
  }

  /** The scripts a rewind runs, for ACL checks. */
  public static List<LuaScript> scripts() {
    return List.of(REWIND, PUT_BACK);
  }

  /** One script call's reply. */
  private record Step(String status, String delivered, String oldest, long again, boolean exact, long entriesRead,
      long pending, long readBefore) {}

  /**
   * @param shards the topic's shards, lowest first
   * @throws RewindRefusedException when a shard refuses; nothing is changed on any shard then
   */
  public RewindPlan rewind(String topic, List<Integer> shards, String group, RewindTarget to, boolean dryRun) {
    List<Integer> selected = shards;
    if (to.shard().isPresent()) {
      int only = to.shard().getAsInt();
      if (!shards.contains(only)) {
        throw new RewindRefusedException("rewind of group '" + group + "' refused: topic '" + topic
            + "' has no shard " + only + " (its shards: " + shards + ")", RewindRefusedException.Reason.NO_SHARD,
            -1, null, null);
      }
      selected = List.of(only);
    }
    Map<Integer, Step> checked = new TreeMap<>();
    for (int shard : selected) {
      String key = StreamFormat.streamKey(keyPrefix, topic, shard);
      checked.put(shard, refuseUnlessFine(topic, group, to, shard, key, step(key, group, to, false)));
    }
    if (dryRun) {
      return plan(topic, group, to, true, checked);
    }
    Map<Integer, Step> applied = new TreeMap<>();
    for (Map.Entry<Integer, Step> e : checked.entrySet()) {
      if (e.getValue().status().equals("behind")) {
        applied.put(e.getKey(), e.getValue());
        continue;
      }
      String key = StreamFormat.streamKey(keyPrefix, topic, e.getKey());
      Step set;
      try {
        set = step(key, group, to, true);
        refuseUnlessFine(topic, group, to, e.getKey(), key, set);
      } catch (RuntimeException refused) {
        putBack(topic, group, applied);
        throw refused;
      }
      applied.put(e.getKey(), set);
    }
    RewindPlan plan = plan(topic, group, to, false, applied);
    log.info("{}", plan);
    return plan;
  }

  private Step step(String key, String group, RewindTarget to, boolean apply) {
    List<?> r = (List<?>) REWIND.runText(redis, List.of(key),
        List.of(group, to.entryId(), to.lastDeliveredId(), Long.toString(countLimit), apply ? "1" : "0"));
    return new Step(text(r.get(0)), text(r.get(1)), text(r.get(2)), number(r.get(3)), number(r.get(4)) == 1,
        number(r.get(5)), number(r.get(6)), number(r.get(7)));
  }

  private static Step refuseUnlessFine(String topic, String group, RewindTarget to, int shard, String key,
      Step s) {
    String what = "rewind of group '" + group + "' on topic '" + topic + "' to " + to + " refused";
    switch (s.status()) {
      case "ok", "behind" -> {
        return s;
      }
      case "no-stream" -> throw new RewindRefusedException(what + ": shard " + shard + " has no stream " + key
          + "; nothing was changed", RewindRefusedException.Reason.NO_STREAM, shard, key, null);
      case "no-group" -> throw new RewindRefusedException(what + ": group '" + group + "' does not exist on shard "
          + shard + " (" + key + "); nothing was changed", RewindRefusedException.Reason.NO_GROUP, shard, key, null);
      case "below" -> throw new RewindRefusedException(what + ": shard " + shard + " (" + key + ") "
          + (s.oldest().isEmpty() ? "retains no entry" : "retains entries from " + s.oldest() + " on")
          + " and older ones were trimmed or deleted, so entries at or after " + to.entryId()
          + " are gone from Redis; nothing was changed. Rewind to " + (s.oldest().isEmpty() ? "a later point"
              : s.oldest() + " or later") + ", or replay older history from the outbox with"
          + " HandoffConsumer.replayFromOutbox(OutboxRange)", RewindRefusedException.Reason.BELOW_RETENTION, shard,
          key, s.oldest().isEmpty() ? null : s.oldest());
      default -> throw new ConsumerException(what + ": unexpected reply '" + s.status() + "' from " + key);
    }
  }

  /** Undoes the shards already set, after a later shard refused: each back to its last-delivered and lag. */
  private void putBack(String topic, String group, Map<Integer, Step> applied) {
    for (Map.Entry<Integer, Step> e : applied.entrySet()) {
      Step s = e.getValue();
      if (s.status().equals("behind")) {
        continue;
      }
      String key = StreamFormat.streamKey(keyPrefix, topic, e.getKey());
      PUT_BACK.runText(redis, List.of(key), List.of(group, s.delivered(), Long.toString(s.readBefore())));
      log.warn("rewind of group '{}' on {} undone: put back at {}, since a later shard refused", group, key,
          s.delivered());
    }
  }

  private RewindPlan plan(String topic, String group, RewindTarget to, boolean dryRun, Map<Integer, Step> steps) {
    List<RewindPlan.Shard> shards = new ArrayList<>();
    steps.forEach((shard, s) -> shards.add(new RewindPlan.Shard(shard, StreamFormat.streamKey(keyPrefix, topic,
        shard), s.delivered(), s.status().equals("ok") ? to.lastDeliveredId() : null, s.again(), s.exact(),
        s.pending())));
    return new RewindPlan(topic, group, to, dryRun, shards);
  }

  private static String text(Object o) {
    return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
  }

  private static long number(Object o) {
    return ((Number) o).longValue();
  }
}
