package dev.handoff.ledger;

import dev.handoff.core.StreamFormat;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamGroupInfo;
import redis.clients.jedis.resps.StreamPendingSummary;

/**
 * What retention holds for the payments topic, as {@code status} shows it: the purge lag (published rows past the
 * outbox retention still in the outbox) and, per stream, the group that holds its history back (the one whose
 * oldest unfinished entry is lowest: the relay trims nothing at or above it).
 *
 * @param outboxRetention the retention the lag is measured against (the relays' setting)
 * @param rowsPastRetention published rows past it, among the oldest {@value #SCAN} rows of the topic
 * @param exact whether that covered every row of the topic (fewer than {@value #SCAN} rows)
 * @param oldestPastRetention how long ago the oldest of them was published, or {@code null}
 * @param holders per shard: the holding group, and where its unfinished entries start
 */
public record RetentionStatus(Duration outboxRetention, long rowsPastRetention, boolean exact,
    Duration oldestPastRetention, Map<Integer, Holder> holders) {

  /** Rows looked at, at most, from the oldest: rows past retention wait there. */
  static final int SCAN = 100_000;

  /** The group holding a stream's history back, and the first ID it has not finished. */
  public record Holder(String group, String from) {}

  static RetentionStatus read(Connection c, String schema, UnifiedJedis redis, String keyPrefix, int shards,
      Duration retention, boolean streams) throws SQLException {
    long past = 0;
    long seen = 0;
    Timestamp oldest = null;
    try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FILTER (WHERE published_at < cut),"
        + " min(published_at) FILTER (WHERE published_at < cut), count(*) FROM (SELECT published_at,"
        + " clock_timestamp() - make_interval(secs => ?) AS cut FROM " + schema + ".outbox WHERE topic = ?"
        + " ORDER BY id LIMIT ?) p")) {
      ps.setDouble(1, retention.toMillis() / 1000.0);
      ps.setString(2, PaymentEvents.TOPIC);
      ps.setInt(3, SCAN);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        past = rs.getLong(1);
        oldest = rs.getTimestamp(2);
        seen = rs.getLong(3);
      }
    }
    Map<Integer, Holder> holders = new LinkedHashMap<>();
    for (int shard = 0; streams && shard < shards; shard++) {
      String key = StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        Holder h = holder(redis, key);
        if (h != null) {
          holders.put(shard, h);
        }
      }
    }
    return new RetentionStatus(retention, past, seen < SCAN,
        oldest == null ? null : Duration.between(oldest.toInstant(), Instant.now()).abs(), holders);
  }

  /** As the relay's trim decides it: per group the lower of its oldest pending and its last-delivered ID. */
  private static Holder holder(UnifiedJedis redis, String key) {
    Holder best = null;
    StreamEntryID bestId = null;
    for (StreamGroupInfo g : redis.xinfoGroups(key)) {
      StreamEntryID candidate = g.getLastDeliveredId();
      StreamPendingSummary pending = redis.xpending(key, g.getName());
      if (pending.getTotal() > 0 && pending.getMinId().compareTo(candidate) < 0) {
        candidate = pending.getMinId();
      }
      if (bestId == null || candidate.compareTo(bestId) < 0) {
        bestId = candidate;
        best = new Holder(g.getName(), candidate.toString());
      }
    }
    return best;
  }

  /** The lines {@code status} prints. */
  List<String> lines(Map<Integer, Long> streamLengths) {
    List<String> out = new ArrayList<>();
    out.add(String.format("outbox retention %s: %,d%s published row(s) past it still in the outbox%s", human(
        outboxRetention), rowsPastRetention, exact ? "" : "+ (among the oldest 100,000)", oldestPastRetention == null
        ? "" : ", the oldest published " + human(oldestPastRetention) + " ago"));
    holders.forEach((shard, h) -> out.add(String.format("  shard %d: the stream's %,d entries are held from %s on by"
        + " group %s (its oldest unfinished entry)", shard, streamLengths.getOrDefault(shard, 0L), h.from(),
        h.group())));
    return out;
  }

  Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("outbox_retention_ms", outboxRetention.toMillis());
    m.put("rows_past_retention", rowsPastRetention);
    m.put("rows_past_retention_exact", exact);
    m.put("oldest_past_retention_ms", oldestPastRetention == null ? null : oldestPastRetention.toMillis());
    Map<String, Object> h = new LinkedHashMap<>();
    holders.forEach((shard, x) -> {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("group", x.group());
      one.put("from", x.from());
      h.put(Integer.toString(shard), one);
    });
    m.put("held_by", h);
    return m;
  }

  private static String human(Duration d) {
    return d.toString().substring(2).toLowerCase(java.util.Locale.ROOT);
  }
}
