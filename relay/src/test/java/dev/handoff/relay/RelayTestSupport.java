package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * What the relay tests share: rows appended through the outbox, a relay of one topic, and a stream or a list read
 * back (a list's elements decode to the same entries) against the outbox, for exact assertions.
 */
final class RelayTestSupport {

  /** An entry of a stream or an element of a list: its ID and the decoded message. */
  record Entry(String id, StreamMessage message) {}

  private RelayTestSupport() {}

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

  /** The elements of a list, head first. */
  static List<Entry> listEntries(UnifiedJedis redis, String key) {
    List<Entry> all = new ArrayList<>();
    for (byte[] raw : redis.lrange(key.getBytes(StandardCharsets.UTF_8), 0, -1)) {
      ListFormat.Element e = ListFormat.decode(raw);
      all.add(new Entry(e.id(), e.message()));
    }
    return all;
  }

  /** Asserts that the entries' outbox row ids strictly increase: the relay took them in outbox order. */
  static void assertInOutboxIdOrder(List<Entry> entries) {
    long previous = 0;
    for (Entry e : entries) {
      assertThat(e.message().outboxId()).as("outbox id of %s", e.id()).isGreaterThan(previous);
      previous = e.message().outboxId();
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

  /** A relay of {@code topic} (one shard) that looks for rows every 100 ms when idle. */
  static RelayBuilder relay(TestEnvironment env, String topic) {
    return Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .idlePollInterval(Duration.ofMillis(100));
  }

  /** Appends {@code n} messages keyed {@code k0, k1, ...} to {@code topic} in one committed transaction. */
  static void appendKeyed(TestEnvironment env, String topic, int n) throws SQLException {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(Message.builder(topic, "order.placed").key("k" + i).payload("payload-" + i).build());
    }
    appendAll(env, Outbox.builder().schema(env.schema()).build(), batch);
  }

  /**
   * Builds {@code successor}, runs relay cycles until no outbox row is unpublished (20 s at most) and closes it;
   * returns how many rows it sent again and found already in Redis.
   */
  static long relayUntilPublished(TestEnvironment env, RelayBuilder successor) {
    AtomicLong resent = new AtomicLong();
    try (Relay relay = successor.listener(new RelayListener() {
      @Override
      public void alreadyPresent(ShardId shard, int rows) {
        resent.addAndGet(rows);
      }
    }).build()) {
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        relay.relayOnce();
        return unpublished(env) == 0;
      });
    }
    return resent.get();
  }

  /** The outbox rows not published yet. */
  static long unpublished(TestEnvironment env) {
    return env.queryLong("select count(*) from outbox where published_at is null");
  }

  /** The outbox rows of {@code topic} not published yet. */
  static long unpublished(TestEnvironment env, String topic) {
    return env.queryLong("select count(*) from outbox where topic = ? and published_at is null", topic);
  }

  /** Appends {@code n} messages to {@code topic} through the outbox, in one committed transaction. */
  static void append(TestEnvironment env, String topic, int n) throws SQLException {
    appendAll(env, Outbox.builder().schema(env.schema()).build(), unkeyed(topic, n));
  }

  /** {@code n} messages of {@code topic} without a key, payloads {@code p0, p1, ...}. */
  static List<Message> unkeyed(String topic, int n) {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(Message.builder(topic, "entry").payload("p" + i).build());
    }
    return batch;
  }

  /** Appends {@code messages} through {@code outbox} in one committed transaction. */
  static void appendAll(TestEnvironment env, Outbox outbox, List<Message> messages) throws SQLException {
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, messages);
      tx.commit();
    }
  }
}
