package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.OutboxRange;
import dev.handoff.core.internal.Json;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The reads the consumer makes of the {@code outbox} table and its purge log: finding the message behind a stream
 * entry whose payload was trimmed away, so that a lost entry can still be dead-lettered whole (and retried) when
 * the consumer shares the producer's database; a shard's unpublished backlog, for the list consumer's status; and
 * the pages and purge accounting of a replay from the outbox.
 */
final class OutboxQueries {

  /** One outbox row as a replay reads it; {@code streamMs} is null until the relay assigned a stream ID. */
  record Row(long id, UUID messageId, int shard, String key, String type, byte[] payload, String headers,
      Instant createdAt, Long streamMs, long streamSeq, boolean published) {}

  private final String schema;
  private final String byStreamId;
  private final String unpublished;

  OutboxQueries(String schema) {
    this.schema = schema;
    this.byStreamId = "SELECT message_id, id, message_key, type, headers::text, payload, created_at FROM " + schema
        + ".outbox WHERE topic = ? AND shard = ? AND stream_ms = ? AND stream_seq = ?";
    // Served by the partial index on unpublished rows.
    this.unpublished = "SELECT count(*) FROM " + schema + ".outbox WHERE topic = ? AND shard = ?"
        + " AND published_at IS NULL";
  }

  /**
   * Which of the messages (outbox id and message ID, in the same order) this database has no trace of: no outbox
   * row with that id and that message ID, and no purge of the topic whose id range holds the id. After a failover
   * to an asynchronous standby these are the messages the new primary never committed (a new row may even reuse
   * the id, with another message ID). Returns their indexes. Each message costs a primary key lookup, and one
   * backward index step in the purge log when its row is gone.
   */
  Set<Integer> ghosts(Connection c, String topic, Long[] outboxIds, UUID[] messageIds) throws SQLException {
    String sql = "SELECT u.i FROM unnest(?::bigint[], ?::uuid[]) WITH ORDINALITY AS u(id, m, i)"
        + " WHERE NOT EXISTS (SELECT 1 FROM " + schema + ".outbox o WHERE o.id = u.id AND o.message_id = u.m)"
        + " AND NOT coalesce((SELECT p.last_id >= u.id FROM " + schema + ".outbox_purged p WHERE p.topic = ?"
        + " AND p.first_id <= u.id ORDER BY p.first_id DESC LIMIT 1), false)";
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      ps.setArray(1, c.createArrayOf("bigint", outboxIds));
      ps.setArray(2, c.createArrayOf("uuid", messageIds));
      ps.setString(3, topic);
      Set<Integer> out = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getInt(1) - 1);
        }
      }
      return out;
    }
  }

  /**
   * Whether this database ever held a row of {@code topic}: one still in the outbox, or a purge of it. A consumer
   * that finds none does not share the producer's database, and cannot tell a ghost from a message.
   */
  boolean everHeld(Connection c, String topic) throws SQLException {
    String sql = "SELECT EXISTS (SELECT 1 FROM " + schema + ".outbox_purged WHERE topic = ?)"
        + " OR EXISTS (SELECT 1 FROM " + schema + ".outbox WHERE topic = ?)";
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      ps.setString(1, topic);
      ps.setString(2, topic);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  /** Rows of a shard not published yet. */
  long unpublished(Connection c, String topic, int shard) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, unpublished)) {
      ps.setString(1, topic);
      ps.setInt(2, shard);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The message the relay published as {@code streamId}, or {@code null} when this database does not have it. */
  InboundMessage find(Connection c, String topic, int shard, String streamKey, String streamId, long deliveries)
      throws SQLException {
    int dash = streamId.indexOf('-');
    try (PreparedStatement ps = Statements.prepare(c, byStreamId)) {
      ps.setString(1, topic);
      ps.setInt(2, shard);
      ps.setLong(3, Long.parseLong(streamId.substring(0, dash)));
      ps.setLong(4, Long.parseLong(streamId.substring(dash + 1)));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        return new InboundMessage(rs.getObject(1, UUID.class), rs.getLong(2), topic, rs.getString(4),
            rs.getString(3), Json.readStringMap(rs.getString(5)), rs.getTimestamp(7).toInstant(), rs.getBytes(6),
            new InboundMessage.Delivery(streamKey, streamId, deliveries));
      }
    }
  }

  /**
   * The next rows of {@code range} after outbox id {@code afterId}, in id order, at most {@code limit}; with
   * {@code idChunk} (not null), only rows of those message IDs. Walks the primary key: the outbox keeps no other
   * index but the unpublished one, so a bound on time or key filters rows as the walk passes them.
   */
  List<Row> page(Connection c, String topic, OutboxRange range, List<UUID> idChunk, long afterId, int limit)
      throws SQLException {
    StringBuilder sql = new StringBuilder("SELECT id, message_id, shard, message_key, type, payload, headers::text,"
        + " created_at, stream_ms, stream_seq, published_at IS NOT NULL FROM " + schema + ".outbox"
        + " WHERE topic = ? AND id > ?");
    List<Object> args = new ArrayList<>(List.of(topic, afterId));
    bounds(sql, args, range, "id", "id", "created_at", "created_at");
    if (range.key() != null) {
      sql.append(" AND message_key = ?");
      args.add(range.key());
    }
    if (idChunk != null) {
      sql.append(" AND message_id = ANY(?)");
      args.add(c.createArrayOf("uuid", idChunk.toArray()));
    }
    sql.append(" ORDER BY id LIMIT ?");
    args.add(limit);
    try (PreparedStatement ps = Statements.prepare(c, sql.toString())) {
      bind(ps, args);
      List<Row> rows = new ArrayList<>(limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long ms = rs.getLong(9);
          Long streamMs = rs.wasNull() ? null : ms;
          rows.add(new Row(rs.getLong(1), rs.getObject(2, UUID.class), rs.getInt(3), rs.getString(4),
              rs.getString(5), rs.getBytes(6), rs.getString(7), rs.getTimestamp(8).toInstant(), streamMs,
              rs.getLong(10), rs.getBoolean(11)));
        }
      }
      return rows;
    }
  }

  /**
   * What the purge log says the retention deleted of {@code range}: {rows certainly in the range, rows of purge
   * batches that overlap the range without lying inside it}. A key bound makes every overlapping batch uncertain,
   * since the log does not record keys.
   */
  long[] purged(Connection c, String topic, OutboxRange range) throws SQLException {
    // Overlap: a batch's id and time spans meet the range's. Inside: both spans lie within the range's bounds, so
    // every row of the batch was in the range.
    StringBuilder overlap = new StringBuilder();
    List<Object> overlapArgs = new ArrayList<>();
    bounds(overlap, overlapArgs, range, "last_id", "first_id", "last_created_at", "first_created_at");
    StringBuilder inside = new StringBuilder("true");
    List<Object> insideArgs = new ArrayList<>();
    if (range.key() != null) {
      inside = new StringBuilder("false");
    } else {
      bounds(inside, insideArgs, range, "first_id", "last_id", "first_created_at", "last_created_at");
    }
    String sql = "SELECT coalesce(sum(rows) FILTER (WHERE inside), 0), coalesce(sum(rows) FILTER (WHERE NOT inside),"
        + " 0) FROM (SELECT rows, (" + inside + ") AS inside FROM " + schema + ".outbox_purged WHERE topic = ?"
        + overlap + ") p";
    List<Object> args = new ArrayList<>(insideArgs);
    args.add(topic);
    args.addAll(overlapArgs);
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    }
  }

  /**
   * Appends {@code AND} conditions for the range's id and time bounds: {@code lowId >= firstId},
   * {@code highId <= lastId}, {@code lowTime >= from}, {@code highTime < to}.
   */
  private static void bounds(StringBuilder sql, List<Object> args, OutboxRange range, String lowId, String highId,
      String lowTime, String highTime) {
    if (range.firstId() != null) {
      sql.append(" AND ").append(lowId).append(" >= ?");
      args.add(range.firstId());
      sql.append(" AND ").append(highId).append(" <= ?");
      args.add(range.lastId());
    }
    if (range.from() != null) {
      sql.append(" AND ").append(lowTime).append(" >= ?");
      args.add(Timestamp.from(range.from()));
    }
    if (range.to() != null) {
      sql.append(" AND ").append(highTime).append(" < ?");
      args.add(Timestamp.from(range.to()));
    }
  }

  private static void bind(PreparedStatement ps, List<Object> args) throws SQLException {
    for (int i = 0; i < args.size(); i++) {
      ps.setObject(i + 1, args.get(i));
    }
  }
}
