package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.outbox.internal.Json;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The one read the consumer makes of the {@code outbox} table: finding the message behind a stream entry whose
 * payload was trimmed away, so that a lost entry can still be dead-lettered whole (and retried) when the consumer
 * shares the producer's database.
 */
final class OutboxQueries {

  private final String byStreamId;

  OutboxQueries(String schema) {
    this.byStreamId = "SELECT message_id, id, message_key, type, headers::text, payload, created_at FROM " + schema
        + ".outbox WHERE topic = ? AND shard = ? AND stream_ms = ? AND stream_seq = ?";
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
