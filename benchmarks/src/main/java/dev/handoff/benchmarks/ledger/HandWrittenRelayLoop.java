package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.ledger.PaymentEvents;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XAddParams;

/**
 * The relay's baseline: what a minimal at-least-once relay does (no leases, no fencing, auto IDs). Per shard, select
 * the next 1,000 unpublished rows, XADD them in one pipeline, mark them published with the IDs Redis returned.
 */
record HandWrittenRelayLoop(DataSource dataSource, UnifiedJedis redis, String schema, int shards) {

  /** Publishes every unpublished row of the topic to the streams under {@code prefix}. */
  void publishAll(String prefix) throws SQLException {
    String select = "SELECT id, message_id, message_key, type, payload, created_at FROM " + schema
        + ".outbox WHERE topic = ? AND shard = ? AND published_at IS NULL ORDER BY id LIMIT 1000";
    String mark = "UPDATE " + schema + ".outbox o SET published_at = now(), stream_ms = u.ms, stream_seq = u.seq"
        + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq) WHERE o.id = u.id";
    try (Connection c = dataSource.getConnection()) {
      for (int shard = 0; shard < shards; shard++) {
        byte[] key = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard).getBytes(StandardCharsets.UTF_8);
        while (true) {
          List<StreamMessage> messages = new ArrayList<>(1000);
          try (PreparedStatement ps = c.prepareStatement(select)) {
            ps.setString(1, PaymentEvents.TOPIC);
            ps.setInt(2, shard);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                messages.add(new StreamMessage(rs.getObject(2, UUID.class), rs.getLong(1), PaymentEvents.TOPIC,
                    rs.getString(4), rs.getString(3), Map.of(), rs.getTimestamp(6).toInstant(), rs.getBytes(5)));
              }
            }
          }
          if (messages.isEmpty()) {
            break;
          }
          List<Response<byte[]>> replies = new ArrayList<>(messages.size());
          try (Pipeline p = RedisPipelines.open(redis)) {
            for (StreamMessage m : messages) {
              replies.add(p.xadd(key, XAddParams.xAddParams(), StreamFormat.encode(m)));
            }
            p.sync();
          }
          Long[] ids = new Long[messages.size()];
          Long[] ms = new Long[ids.length];
          Long[] seq = new Long[ids.length];
          for (int i = 0; i < ids.length; i++) {
            String id = new String(replies.get(i).get(), StandardCharsets.UTF_8);
            int dash = id.indexOf('-');
            ids[i] = messages.get(i).outboxId();
            ms[i] = Long.parseLong(id.substring(0, dash));
            seq[i] = Long.parseLong(id.substring(dash + 1));
          }
          try (PreparedStatement ps = c.prepareStatement(mark)) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            ps.setArray(2, c.createArrayOf("bigint", ms));
            ps.setArray(3, c.createArrayOf("bigint", seq));
            ps.executeUpdate();
          }
        }
      }
    }
  }
}
