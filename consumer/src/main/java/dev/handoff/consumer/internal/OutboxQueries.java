package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.outbox.internal.Json;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The reads the consumer makes of the {@code outbox} table: finding the message behind a stream entry whose
 * payload was trimmed away, so that a lost entry can still be dead-lettered whole (and retried) when the consumer
 * shares the producer's database; and a shard's unpublished backlog, for the list consumer's status.
 */
final class OutboxQueries {

  private final String byStreamId;
  private final String unpublished;

  OutboxQueries(String schema) {
    this.byStreamId = "SELECT message_id, id, message_key, type, headers::text, payload, created_at FROM " + schema
        + ".outbox WHERE topic = ? AND shard = ? AND stream_ms = ? AND stream_seq = ?";
    // Served by the partial index on unpublished rows.
    this.unpublished = "SELECT count(*) FROM " + schema + ".outbox WHERE topic = ? AND shard = ?"
        + " AND published_at IS NULL";
  }

  /** Rows of a shard not published yet. */
  long unpublished(Connection c, String topic, int shard) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(unpublished)) {
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
    try (PreparedStatement ps = c.prepareStatement(byStreamId)) {
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
            streamKey, streamId, deliveries);
      }
    }
  }
}
