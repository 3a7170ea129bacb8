package dev.handoff.outbox.internal;

import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A cached count of each bounded topic's unpublished rows. A count runs at most once per refresh interval per
 * topic, and is bounded by the topic's capacity (it stops counting at capacity + 1 rows), so a capacity check
 * never costs a full count(*) of a large backlog. Appends raise the cached figure between refreshes.
 */
final class DepthGauge {

  private record Sample(long depth, long takenAtNanos) {}

  private final String countSql;
  private final long refreshNanos;
  private final ConcurrentHashMap<String, Sample> samples = new ConcurrentHashMap<>();

  DepthGauge(String schema, long refreshNanos) {
    this.countSql =
        "SELECT count(*) FROM (SELECT 1 FROM " + schema + ".outbox WHERE topic = ? AND published_at IS NULL LIMIT ?) r";
    this.refreshNanos = refreshNanos;
  }

  /**
   * The cached depth of {@code topic}, counted again on {@code tx} if the sample is older than the interval. One
   * caller counts; the others go on with the figure it replaces, so that a process whose sessions all append at once
   * runs one count per interval, not one per session.
   */
  long depth(Connection tx, String topic, long capacity) throws SQLException {
    Sample s = samples.get(topic);
    long now = System.nanoTime();
    if (s != null && now - s.takenAtNanos < refreshNanos) {
      return s.depth;
    }
    if (s != null && !samples.replace(topic, s, new Sample(s.depth, now))) {
      return samples.getOrDefault(topic, s).depth; // another session counts now
    }
    return count(tx, topic, capacity);
  }

  /** Counts now, bypassing the cache, and caches the result. */
  long count(Connection tx, String topic, long capacity) throws SQLException {
    long depth;
    try (PreparedStatement ps = Statements.prepare(tx, countSql)) {
      ps.setString(1, topic);
      ps.setLong(2, capacity + 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        depth = rs.getLong(1);
      }
    }
    samples.put(topic, new Sample(depth, System.nanoTime()));
    return depth;
  }

  void added(String topic, int rows) {
    samples.computeIfPresent(topic, (t, s) -> new Sample(s.depth + rows, s.takenAtNanos));
  }
}
