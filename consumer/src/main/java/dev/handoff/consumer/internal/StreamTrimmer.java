package dev.handoff.consumer.internal;

import dev.handoff.consumer.admin.TrimReport;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.AclErrors;
import dev.handoff.core.internal.StreamId;
import dev.handoff.core.internal.StreamTrimScript;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.resps.StreamPendingSummary;

/**
 * Trims a topic's streams to what every group finished, with the relay's own script ({@link StreamTrimScript}):
 * each call reads the groups and trims in one atomic step, so it removes only entries that every group had
 * delivered and acknowledged at that instant, exactly what the relay's next maintenance would remove. That is why
 * it is safe while relays and consumers run. Whole stream nodes go first, at most {@code trimLimit} entries per
 * call so Redis is never blocked long, then one exact call removes the rest below the trim point.
 *
 * <p>A stream without a group is not trimmed: no group has finished anything, and the relay keeps such a stream
 * for the outbox retention, which only the relay's configuration knows.
 *
 * <p>Thread-safe: it keeps no state besides its immutable settings.
 */
public final class StreamTrimmer {

  private static final Logger log = LoggerFactory.getLogger(StreamTrimmer.class);

  private final UnifiedJedis redis;
  private final String keyPrefix;
  private final long countLimit;
  private final int trimLimit;

  public StreamTrimmer(UnifiedJedis redis, String keyPrefix, long countLimit, int trimLimit) {
    this.redis = redis;
    this.keyPrefix = keyPrefix;
    this.countLimit = countLimit;
    this.trimLimit = trimLimit;
  }

  /**
   * @param shards the topic's shards, lowest first
   * @param progress called with each shard's line once it is done
   */
  public TrimReport trim(String topic, List<Integer> shards, boolean dryRun, Consumer<TrimReport.Shard> progress) {
    List<TrimReport.Shard> out = new ArrayList<>();
    for (int shard : shards) {
      TrimReport.Shard s = shard(StreamFormat.streamKey(keyPrefix, topic, shard), shard, dryRun);
      out.add(s);
      progress.accept(s);
    }
    TrimReport report = new TrimReport(topic, dryRun, out);
    log.info("{}", report);
    return report;
  }

  private TrimReport.Shard shard(String key, int shard, boolean dryRun) {
    if (!AclErrors.call("EXISTS", List.of(key), () -> redis.exists(key))) {
      return new TrimReport.Shard(shard, key, false, 0, 0, null, null, 0, true, List.of());
    }
    long before = AclErrors.call("XLEN", List.of(key), () -> redis.xlen(key));
    List<TrimReport.Group> groups = new ArrayList<>();
    for (StreamGroupInfo g : AclErrors.call("XINFO|GROUPS", List.of(key), () -> redis.xinfoGroups(key))) {
      String delivered = g.getLastDeliveredId().toString();
      long[] backlog = StreamCounts.count(redis, key, "(" + delivered, "+", countLimit);
      StreamPendingSummary p = AclErrors.call("XPENDING", List.of(key), () -> redis.xpending(key, g.getName()));
      groups.add(new TrimReport.Group(g.getName(), delivered, backlog[0], backlog[1] == 1, p.getTotal(),
          p.getMinId() == null ? null : p.getMinId().toString()));
    }
    if (dryRun) {
      StreamTrimScript.Result r = StreamTrimScript.run(redis, key, StreamId.ZERO, trimLimit,
          StreamTrimScript.Mode.NONE);
      if (r.groups() == 0) {
        return new TrimReport.Shard(shard, key, true, before, r.length(), null, null, 0, true, groups);
      }
      // Nothing is below 0-0, and Redis refuses "(0-0" as an end.
      long[] below = r.minId().equals("0-0") ? new long[] {0, 1}
          : StreamCounts.count(redis, key, "-", "(" + r.minId(), countLimit);
      return new TrimReport.Shard(shard, key, true, before, r.length(), r.minId(), r.holder(), below[0],
          below[1] == 1, groups);
    }
    long removed = 0;
    StreamTrimScript.Result r;
    do {
      r = StreamTrimScript.run(redis, key, StreamId.ZERO, trimLimit, StreamTrimScript.Mode.APPROX);
      removed += r.evicted();
    } while (r.evicted() >= trimLimit);
    if (r.groups() > 0) {
      r = StreamTrimScript.run(redis, key, StreamId.ZERO, trimLimit, StreamTrimScript.Mode.EXACT);
      removed += r.evicted();
    }
    return new TrimReport.Shard(shard, key, true, before, r.length(), r.groups() == 0 ? null : r.minId(),
        r.groups() == 0 ? null : r.holder(), removed, true, groups);
  }
}
