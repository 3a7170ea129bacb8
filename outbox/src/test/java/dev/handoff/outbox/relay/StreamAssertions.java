package dev.handoff.outbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.StreamMessage;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

/** Reads a stream and the outbox back, for exact assertions. */
final class StreamAssertions {

  /** An entry of a stream: its ID and the decoded message. */
  record Entry(String id, StreamMessage message) {}

  private StreamAssertions() {}

  static List<Entry> entries(UnifiedJedis redis, String key) {
    List<Entry> all = new ArrayList<>();
    byte[] start = "-".getBytes(StandardCharsets.UTF_8);
    while (true) {
      List<Object> page = redis.xrange(key.getBytes(StandardCharsets.UTF_8), start,
          "+".getBytes(StandardCharsets.UTF_8), 1000);
      for (Object o : page) {
        List<?> entry = (List<?>) o;
        String id = new String((byte[]) entry.get(0), StandardCharsets.UTF_8);
        List<?> flat = (List<?>) entry.get(1);
        Map<byte[], byte[]> fields = new LinkedHashMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
          fields.put((byte[]) flat.get(i), (byte[]) flat.get(i + 1));
        }
        all.add(new Entry(id, StreamFormat.decode(fields)));
      }
      if (page.size() < 1000) {
        return all;
      }
      start = ("(" + all.get(all.size() - 1).id()).getBytes(StandardCharsets.UTF_8);
    }
  }

  /** Asserts that entry IDs strictly increase and that each matches the stream ID stored on its outbox row. */
  static void assertIdsIncreaseAndMatchOutbox(TestEnvironment env, List<Entry> entries) throws SQLException {
    Map<UUID, String> stored = new LinkedHashMap<>();
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "select message_id, stream_ms || '-' || stream_seq from outbox where stream_ms is not null");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        stored.put(rs.getObject(1, UUID.class), rs.getString(2));
      }
    }
    long prevMs = -1;
    long prevSeq = -1;
    for (Entry e : entries) {
      String[] parts = e.id().split("-");
      long ms = Long.parseLong(parts[0]);
      long seq = Long.parseLong(parts[1]);
      assertThat(ms > prevMs || (ms == prevMs && seq > prevSeq)).as("ids strictly increase at %s", e.id()).isTrue();
      prevMs = ms;
      prevSeq = seq;
      assertThat(stored.get(e.message().messageId())).as("stored stream id of %s", e.message().messageId())
          .isEqualTo(e.id());
    }
  }

  /** Lets the pool discard the connections a Redis restart broke; returns the client once a PING goes through. */
  static RedisClient reconnected(RedisClient redis) {
    for (int i = 0; i < 20; i++) {
      try {
        redis.ping();
        return redis;
      } catch (JedisConnectionException e) {
        // a broken pooled connection; the next borrow gets another
      }
    }
    throw new IllegalStateException("Redis did not come back");
  }

  /** Appends {@code n} messages to {@code topic} through the outbox, in one committed transaction. */
  static void append(TestEnvironment env, String topic, int n) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        batch.add(Message.builder(topic, "entry").payload("p" + i).build());
      }
      outbox.appendAll(tx, batch);
      tx.commit();
    }
  }
}
