package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.internal.Json;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** All SQL on the {@code dead_letter} table. */
final class DeadLetterQueries {

  /** What to store for one dead entry; message fields are {@code null} when unknown. */
  record Row(UUID messageId, String topic, String streamKey, String streamId, Long outboxId, String key,
      String type, Map<String, String> headers, byte[] payload, Instant createdAt, long deliveries, String error) {

    static Row of(InboundMessage m, String error) {
      return new Row(m.messageId(), m.topic(), m.delivery().streamKey(), m.delivery().streamId(), m.outboxId(),
          m.key(), m.type(), m.headers(), m.payload(), m.createdAt(), m.delivery().count(), error);
    }
  }

  /** A stored dead letter with its message, locked for a retry. */
  record Stored(long id, String status, InboundMessage message) {}

  /** The columns {@link #read} maps, in a SELECT list. */
  static final String COLUMNS = "id, consumer_group, message_id, topic, stream_key, stream_id, type, deliveries,"
      + " error, dead_at, status, retry_requested_at, retried_at, retry_failed_at, retry_error";
  /** The condition a row meets when its message is stored whole, so that a retry can run it. */
  static final String RETRYABLE = "message_id IS NOT NULL AND type IS NOT NULL AND payload IS NOT NULL";
  private static final String STORED = "id, status, message_id, topic, stream_key, stream_id, outbox_id,"
      + " message_key, type, headers::text, payload, created_at, deliveries";

  private final String insert;
  private final String lock;
  private final String claimRequested;
  private final String markRetried;
  private final String recordRetryFailure;
  private final String list;
  private final String countDead;
  private final String retryable;

  DeadLetterQueries(String schema) {
    String table = schema + ".dead_letter";
    this.insert = "INSERT INTO " + table + " (consumer_group, message_id, topic, stream_key, stream_id, outbox_id,"
        + " message_key, type, headers, payload, created_at, deliveries, error)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)"
        + " ON CONFLICT (consumer_group, stream_key, stream_id) DO NOTHING";
    this.lock = "SELECT " + STORED + " FROM " + table + " WHERE id = ? AND consumer_group = ? FOR UPDATE";
    // SKIP LOCKED: of several consumers of the group, the first to lock a request runs it; the others take the next
    // one, or none, instead of queueing behind a handler.
    this.claimRequested = "SELECT " + STORED + " FROM " + table + " WHERE consumer_group = ?"
        + " AND retry_requested_at IS NOT NULL AND status = 'dead' AND " + RETRYABLE
        + " AND (?::text IS NULL OR stream_key = ?) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
    this.markRetried = "UPDATE " + table + " SET status = 'retried', retried_at = now(), retry_requested_at = NULL"
        + " WHERE id = ?";
    this.recordRetryFailure = "UPDATE " + table + " SET retry_requested_at = NULL, retry_failed_at = now(),"
        + " retry_error = ? WHERE id = ? AND status = 'dead'";
    this.list = "SELECT " + COLUMNS + " FROM " + table + " WHERE consumer_group = ? ORDER BY id DESC LIMIT ?";
    this.countDead = "SELECT count(*) FROM " + table + " WHERE consumer_group = ? AND status = 'dead'";
    this.retryable = "SELECT id FROM " + table + " WHERE consumer_group = ? AND status = 'dead' AND " + RETRYABLE
        + " ORDER BY id";
  }

  /** Returns whether a row was inserted (false: this entry was dead-lettered before). */
  boolean insert(Connection tx, String group, Row r) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, insert)) {
      ps.setString(1, group);
      ps.setObject(2, r.messageId());
      ps.setString(3, r.topic());
      ps.setString(4, r.streamKey());
      ps.setString(5, r.streamId());
      if (r.outboxId() == null) {
        ps.setNull(6, Types.BIGINT);
      } else {
        ps.setLong(6, r.outboxId());
      }
      ps.setString(7, r.key());
      ps.setString(8, r.type());
      ps.setString(9, r.headers() == null ? null : Json.writeStringMap(r.headers()));
      ps.setBytes(10, r.payload());
      ps.setTimestamp(11, r.createdAt() == null ? null : Timestamp.from(r.createdAt()));
      ps.setInt(12, (int) Math.min(Integer.MAX_VALUE, r.deliveries()));
      ps.setString(13, r.error());
      return ps.executeUpdate() == 1;
    }
  }

  /** Locks dead letter {@code id} of {@code group}; {@code null} if there is none. */
  Stored lock(Connection tx, String group, long id) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, lock)) {
      ps.setLong(1, id);
      ps.setString(2, group);
      return stored(ps);
    }
  }

  /**
   * Locks the group's oldest requested retry that no other transaction holds, of {@code streamKey}'s entries only
   * unless it is null; {@code null} if there is none.
   */
  Stored claimRequested(Connection tx, String group, String streamKey) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, claimRequested)) {
      ps.setString(1, group);
      ps.setString(2, streamKey);
      ps.setString(3, streamKey);
      return stored(ps);
    }
  }

  private static Stored stored(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        return null;
      }
      UUID messageId = rs.getObject("message_id", UUID.class);
      String type = rs.getString("type");
      byte[] payload = rs.getBytes("payload");
      Timestamp created = rs.getTimestamp("created_at");
      InboundMessage message = null;
      if (messageId != null && type != null && payload != null) {
        String headers = rs.getString("headers");
        long outboxId = rs.getLong("outbox_id");
        message = new InboundMessage(messageId, outboxId, rs.getString("topic"), type,
            rs.getString("message_key"), headers == null ? Map.of() : Json.readStringMap(headers),
            created == null ? Instant.EPOCH : created.toInstant(), payload, new InboundMessage.Delivery(
                rs.getString("stream_key"), rs.getString("stream_id"), rs.getInt("deliveries")));
      }
      return new Stored(rs.getLong("id"), rs.getString("status"), message);
    }
  }

  void markRetried(Connection tx, long id) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, markRetried)) {
      ps.setLong(1, id);
      ps.executeUpdate();
    }
  }

  /** A requested retry whose handler failed: the request is cleared (no loop) and the failure kept. */
  void recordRetryFailure(Connection tx, long id, String error) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, recordRetryFailure)) {
      ps.setString(1, error);
      ps.setLong(2, id);
      ps.executeUpdate();
    }
  }

  List<DeadLetter> list(Connection c, String group, int limit) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, list)) {
      ps.setString(1, group);
      ps.setInt(2, limit);
      List<DeadLetter> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(read(rs));
        }
      }
      return out;
    }
  }

  /** The dead letter of the current row of a result selecting {@link #COLUMNS}. */
  static DeadLetter read(ResultSet rs) throws SQLException {
    return new DeadLetter(rs.getLong("id"), rs.getObject("message_id", UUID.class), rs.getString("type"),
        new DeadLetter.Delivery(rs.getString("stream_key"), rs.getString("stream_id"), rs.getInt("deliveries")),
        rs.getString("error"), instant(rs, "dead_at"), rs.getString("status"), rs.getString("consumer_group"),
        rs.getString("topic"), new DeadLetter.Retry(instant(rs, "retry_requested_at"), instant(rs, "retried_at"),
            instant(rs, "retry_failed_at"), rs.getString("retry_error")));
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    Timestamp t = rs.getTimestamp(column);
    return t == null ? null : t.toInstant();
  }

  long countDead(Connection c, String group) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, countDead)) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  List<Long> retryableIds(Connection c, String group) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, retryable)) {
      ps.setString(1, group);
      List<Long> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getLong(1));
        }
      }
      return out;
    }
  }
}
