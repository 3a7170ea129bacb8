package dev.handoff.outbox.internal;

import dev.handoff.outbox.ShardId;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** The relay's SQL on the {@code outbox} table. Every write is fenced by the lease epoch. */
final class OutboxQueries {

  private static final String ROW_COLUMNS =
      "id, message_id, message_key, type, payload, headers::text, created_at, stream_ms, stream_seq";

  private final String assign;
  private final String assigned;
  private final String markPublished;
  private final String unassign;
  private final String republish;
  private final String purge;

  OutboxQueries(String schema) {
    String outbox = schema + ".outbox";
    String lease = schema + ".relay_lease";
    String fence = "SELECT 1 FROM " + lease + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ?";
    // One statement, one round trip: check the lease (and lock it, so a takeover waits for this to commit), take
    // the next unassigned rows in id order, give them consecutive stream IDs above the last one assigned, and move
    // the lease's last assigned ID forward.
    assign = "WITH lease AS ("
        + " SELECT last_ms, last_seq,"
        + " GREATEST(last_ms, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS ms"
        + " FROM " + lease
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? AND expires_at > clock_timestamp()"
        + " FOR UPDATE),"
        + " picked AS ("
        + " SELECT p.id, row_number() OVER (ORDER BY p.id) AS rn FROM ("
        + " SELECT id FROM " + outbox
        + " WHERE topic = ? AND shard = ? AND published_at IS NULL AND stream_ms IS NULL"
        + " ORDER BY id LIMIT ?) p"
        + " WHERE EXISTS (SELECT 1 FROM lease)),"
        + " base AS (SELECT ms, CASE WHEN ms = last_ms THEN last_seq ELSE -1 END AS seq FROM lease),"
        + " done AS ("
        + " UPDATE " + outbox + " o SET stream_ms = base.ms, stream_seq = base.seq + picked.rn"
        + " FROM picked, base WHERE o.id = picked.id"
        + " RETURNING o.id, o.message_id, o.message_key, o.type, o.payload, o.headers::text AS headers,"
        + " o.created_at, o.stream_ms, o.stream_seq),"
        + " moved AS ("
        + " UPDATE " + lease + " l SET last_ms = base.ms, last_seq = base.seq + (SELECT count(*) FROM picked),"
        + " updated_at = now()"
        + " FROM base WHERE l.topic = ? AND l.shard = ? AND EXISTS (SELECT 1 FROM picked))"
        + " SELECT (SELECT count(*) FROM lease) AS owned, done.* FROM (SELECT 1) one"
        + " LEFT JOIN done ON true ORDER BY done.stream_seq";
    assigned = "SELECT " + ROW_COLUMNS + " FROM " + outbox
        + " WHERE topic = ? AND shard = ? AND published_at IS NULL AND stream_ms IS NOT NULL"
        + " ORDER BY stream_ms, stream_seq LIMIT ?";
    markPublished = "WITH lease AS ("
        + " UPDATE " + lease + " SET entries_added = GREATEST(entries_added, ?), updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? RETURNING 1)"
        + " , done AS (UPDATE " + outbox + " SET published_at = now()"
        + " WHERE id = ANY(?) AND published_at IS NULL AND EXISTS (SELECT 1 FROM lease) RETURNING 1)"
        + " SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM done)";
    unassign = "UPDATE " + outbox + " SET stream_ms = NULL, stream_seq = NULL"
        + " WHERE id = ANY(?) AND published_at IS NULL AND EXISTS (" + fence + ")";
    // After Redis lost a stream: everything at or above the watermark (what some group may not have finished)
    // becomes unpublished again, keeping its stream ID, and Redis's count of added entries starts over.
    republish = "WITH lease AS ("
        + " UPDATE " + lease + " SET entries_added = 0, updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? RETURNING watermark_ms, watermark_seq)"
        + " UPDATE " + outbox + " o SET published_at = NULL FROM lease"
        + " WHERE o.topic = ? AND o.shard = ? AND o.published_at IS NOT NULL"
        + " AND (o.stream_ms, o.stream_seq) >= (lease.watermark_ms, lease.watermark_seq)";
    purge = "DELETE FROM " + outbox + " WHERE id IN ("
        + " SELECT id FROM " + outbox
        + " WHERE published_at < clock_timestamp() - make_interval(secs => ?) AND topic = ANY(?)"
        + " ORDER BY id LIMIT ?)";
  }

  /** The outcome of {@link #assign}: whether the lease still held, and the rows that got IDs. */
  record Assignment(boolean owned, List<OutboxRow> rows) {}

  Assignment assign(Connection c, ShardId shard, String owner, long epoch, int limit) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(assign)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setString(3, owner);
      ps.setLong(4, epoch);
      ps.setString(5, shard.topic());
      ps.setInt(6, shard.shard());
      ps.setInt(7, limit);
      ps.setString(8, shard.topic());
      ps.setInt(9, shard.shard());
      List<OutboxRow> rows = new ArrayList<>();
      boolean owned = false;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          owned = rs.getLong("owned") > 0;
          if (rs.getObject("id") != null) {
            rows.add(row(rs, shard.topic(), 2));
          }
        }
      }
      return new Assignment(owned, rows);
    }
  }

  /** Rows with a stream ID but not yet confirmed in the stream, in stream ID order. */
  List<OutboxRow> assigned(Connection c, ShardId shard, int limit) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(assigned)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setInt(3, limit);
      List<OutboxRow> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(row(rs, shard.topic(), 1));
        }
      }
      return rows;
    }
  }

  /** Marks rows published and records Redis's count of added entries; -1 when the lease was lost. */
  int markPublished(Connection c, ShardId shard, String owner, long epoch, long[] ids, long entriesAdded)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(markPublished)) {
      ps.setLong(1, entriesAdded);
      ps.setString(2, shard.topic());
      ps.setInt(3, shard.shard());
      ps.setString(4, owner);
      ps.setLong(5, epoch);
      ps.setArray(6, c.createArrayOf("bigint", box(ids)));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) == 0 ? -1 : rs.getInt(2);
      }
    }
  }

  int unassign(Connection c, ShardId shard, String owner, long epoch, long[] ids) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(unassign)) {
      ps.setArray(1, c.createArrayOf("bigint", box(ids)));
      ps.setString(2, shard.topic());
      ps.setInt(3, shard.shard());
      ps.setString(4, owner);
      ps.setLong(5, epoch);
      return ps.executeUpdate();
    }
  }

  long republish(Connection c, ShardId shard, String owner, long epoch) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(republish)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setString(3, owner);
      ps.setLong(4, epoch);
      ps.setString(5, shard.topic());
      ps.setInt(6, shard.shard());
      return ps.executeUpdate();
    }
  }

  int purge(Connection c, Duration retention, String[] topics, int limit) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(purge)) {
      ps.setDouble(1, retention.toMillis() / 1000.0);
      ps.setArray(2, c.createArrayOf("text", topics));
      ps.setInt(3, limit);
      return ps.executeUpdate();
    }
  }

  private static OutboxRow row(ResultSet rs, String topic, int first) throws SQLException {
    java.time.OffsetDateTime created = rs.getObject(first + 6, java.time.OffsetDateTime.class);
    return new OutboxRow(
        rs.getLong(first),
        rs.getObject(first + 1, UUID.class),
        topic,
        rs.getString(first + 2),
        rs.getString(first + 3),
        rs.getBytes(first + 4),
        rs.getString(first + 5),
        created.toInstant(),
        new StreamId(rs.getLong(first + 7), rs.getLong(first + 8)));
  }

  private static Long[] box(long[] ids) {
    Long[] boxed = new Long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      boxed[i] = ids[i];
    }
    return boxed;
  }
}
