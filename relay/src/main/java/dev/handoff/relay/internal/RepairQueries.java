package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Notifications;
import dev.handoff.core.internal.Statements;
import dev.handoff.core.internal.StreamId;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The SQL of the repair of entries gone from a stream: the shards of a topic, a walk over a shard's published rows,
 * and the reset of rows whose entries are gone so that the relay owning the shard publishes them again.
 */
final class RepairQueries {

  /** A shard of a topic as {@code relay_lease} knows it: its key prefix and trim watermark. */
  record LeaseRow(ShardId shard, String keyPrefix, StreamId watermark) {}

  /** A published row: its outbox id and the stream ID it was published under. */
  record PublishedRow(long id, StreamId streamId) {}

  private final String shards;
  private final String walk;
  private final String reset;
  private final String wake;

  RepairQueries(String schema) {
    String outbox = schema + ".outbox";
    shards = "SELECT shard, key_prefix, watermark_ms, watermark_seq FROM " + schema + ".relay_lease"
        + " WHERE topic = ? ORDER BY shard";
    // Along the primary key, one page at a time from where the last page ended: the only index on published rows.
    // Stream IDs do not rise with ids (a row that commits late, a re-IDed anomaly, a repaired row all get a stream
    // ID above rows with higher ids), so no id bounds the rows above a stream ID: the walk covers the shard's
    // retained rows, a bounded page per statement, and keeps only the few columns it compares.
    walk = "SELECT id, stream_ms, stream_seq FROM " + outbox
        + " WHERE id > ? AND topic = ? AND shard = ? AND published_at IS NOT NULL"
        + " AND (stream_ms, stream_seq) >= (?, ?) ORDER BY id LIMIT ?";
    // Guarded by the stream ID seen: a row published again meanwhile (by an earlier repair, or re-IDed) is left
    // alone. Looked up by primary key one id at a time (LATERAL ... LIMIT 1), never a join left to the statistics.
    reset = "UPDATE " + outbox + " o SET stream_ms = NULL, stream_seq = NULL, published_at = NULL"
        + " FROM (SELECT x.tid FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq)"
        + " CROSS JOIN LATERAL (SELECT i.ctid AS tid FROM " + outbox + " i WHERE i.id = u.id AND i.topic = ?"
        + " AND i.shard = ? AND i.published_at IS NOT NULL AND i.stream_ms = u.ms AND i.stream_seq = u.seq"
        + " LIMIT 1) x) t WHERE o.ctid = t.tid RETURNING o.id";
    wake = "SELECT pg_notify(?, ?)";
  }

  /** The topic's shards that a relay ever created a lease row for, in shard order. */
  List<LeaseRow> shards(Connection c, String topic) throws SQLException {
    List<LeaseRow> out = new ArrayList<>();
    try (PreparedStatement ps = Statements.prepare(c, shards)) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new LeaseRow(new ShardId(topic, rs.getInt(1)), rs.getString(2),
              new StreamId(rs.getLong(3), rs.getLong(4))));
        }
      }
    }
    return out;
  }

  /** Up to {@code limit} published rows of the shard, id above {@code afterId}, stream ID at or above {@code floor}. */
  List<PublishedRow> page(Connection c, ShardId shard, long afterId, StreamId floor, int limit) throws SQLException {
    List<PublishedRow> out = new ArrayList<>(Math.min(limit, 1024));
    try (PreparedStatement ps = Statements.prepare(c, walk)) {
      ps.setLong(1, afterId);
      ps.setString(2, shard.topic());
      ps.setInt(3, shard.shard());
      ps.setLong(4, floor.ms());
      ps.setLong(5, floor.seq());
      ps.setInt(6, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new PublishedRow(rs.getLong(1), new StreamId(rs.getLong(2), rs.getLong(3))));
        }
      }
    }
    return out;
  }

  /**
   * Makes the rows unpublished, without a stream ID, where each still has the stream ID it was seen with, and wakes
   * the relays of the schema; one transaction. Returns the ids reset.
   */
  List<Long> reset(Connection c, String schema, ShardId shard, List<PublishedRow> rows) throws SQLException {
    Long[] ids = new Long[rows.size()];
    Long[] ms = new Long[rows.size()];
    Long[] seq = new Long[rows.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = rows.get(i).id();
      ms[i] = rows.get(i).streamId().ms();
      seq[i] = rows.get(i).streamId().seq();
    }
    return Transactions.inOne(c, () -> {
      List<Long> done = new ArrayList<>();
      try (PreparedStatement ps = Statements.prepare(c, reset)) {
        ps.setArray(1, c.createArrayOf("bigint", ids));
        ps.setArray(2, c.createArrayOf("bigint", ms));
        ps.setArray(3, c.createArrayOf("bigint", seq));
        ps.setString(4, shard.topic());
        ps.setInt(5, shard.shard());
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            done.add(rs.getLong(1));
          }
        }
      }
      try (PreparedStatement ps = Statements.prepare(c, wake)) {
        ps.setString(1, Notifications.channel(schema));
        ps.setString(2, shard.topic());
        ps.execute();
      }
      done.sort(null);
      return done;
    });
  }
}
