package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.PaymentEvents;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XAddParams;

/**
 * The raw pipeline's relay, one thread with no handoff code: in one transaction, select the next 1,000 unpublished
 * outbox rows of the topic, XADD them in one pipeline with IDs it chose (one stream per shard), mark them published,
 * commit. When a select finds nothing it commits (a read-only transaction, which PostgreSQL counts as a commit too)
 * and polls again after {@link #IDLE_MILLIS}. No leases, no fencing, one relay only.
 */
final class RawRelayLoop {

  /** Poll interval when the outbox is empty: short, so that latency at low rates is not the poll's. */
  static final long IDLE_MILLIS = 2;

  /** Stream entry fields the raw consumer reads. */
  static final String MESSAGE_ID = "message_id";
  static final String KEY = "key";
  static final String PAYLOAD = "payload";

  private final DataSource dataSource;
  private final UnifiedJedis redis;
  private final String schema;
  private final String prefix;
  private final int shards;
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong published = new AtomicLong();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread = new Thread(this::loop, "bench-raw-relay");

  RawRelayLoop(DataSource dataSource, UnifiedJedis redis, String schema, String prefix, int shards) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.schema = schema;
    this.prefix = prefix;
    this.shards = shards;
  }

  void start() {
    thread.start();
  }

  /** Stops after the current batch and waits for the thread. */
  void stop() {
    running.set(false);
    BenchThreads.joinAll(List.of(thread));
  }

  /** Transactions committed, empty polls included. */
  long commits() {
    return commits.get();
  }

  long published() {
    return published.get();
  }

  Throwable failure() {
    return failure.get();
  }

  private void loop() {
    String select = "SELECT id, shard, message_id, message_key, payload FROM " + schema + ".outbox"
        + " WHERE topic = ? AND published_at IS NULL ORDER BY id LIMIT 1000";
    String mark = "UPDATE " + schema + ".outbox o SET published_at = now(), stream_ms = u.ms, stream_seq = u.seq"
        + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq) WHERE o.id = u.id";
    List<String> keys = new ArrayList<>();
    for (int s = 0; s < shards; s++) {
      // The same key names as handoff's streams, only so that the run's sampler can read pending counts the same way.
      keys.add(StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, s));
    }
    long[] lastMs = new long[shards];
    long[] lastSeq = new long[shards];
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      while (running.get()) {
        List<Object[]> rows = new ArrayList<>(1000);
        try (PreparedStatement ps = c.prepareStatement(select)) {
          ps.setString(1, PaymentEvents.TOPIC);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              rows.add(new Object[] {rs.getLong(1), rs.getInt(2), rs.getString(3), rs.getString(4), rs.getBytes(5)});
            }
          }
        }
        if (rows.isEmpty()) {
          c.commit();
          commits.incrementAndGet();
          BenchThreads.pause(IDLE_MILLIS);
          continue;
        }
        Long[] ids = new Long[rows.size()];
        Long[] ms = new Long[ids.length];
        Long[] seq = new Long[ids.length];
        List<Response<byte[]>> replies = new ArrayList<>(ids.length);
        try (Pipeline p = RedisPipelines.open(redis)) {
          for (int i = 0; i < ids.length; i++) {
            Object[] row = rows.get(i);
            int shard = (Integer) row[1];
            // Explicit IDs, increasing per stream as XADD requires: the mark needs no reply from Redis.
            long now = System.currentTimeMillis();
            if (now > lastMs[shard]) {
              lastMs[shard] = now;
              lastSeq[shard] = 0;
            } else {
              lastSeq[shard]++;
            }
            ids[i] = (Long) row[0];
            ms[i] = lastMs[shard];
            seq[i] = lastSeq[shard];
            Map<byte[], byte[]> fields = new LinkedHashMap<>(4);
            fields.put(bytes(MESSAGE_ID), bytes((String) row[2]));
            fields.put(bytes(KEY), bytes((String) row[3]));
            fields.put(bytes(PAYLOAD), (byte[]) row[4]);
            replies.add(p.xadd(bytes(keys.get(shard)), XAddParams.xAddParams().id(ms[i], seq[i]), fields));
          }
          p.sync();
        }
        replies.forEach(Response::get); // a refused XADD throws here, before its row is marked
        try (PreparedStatement ps = c.prepareStatement(mark)) {
          ps.setArray(1, c.createArrayOf("bigint", ids));
          ps.setArray(2, c.createArrayOf("bigint", ms));
          ps.setArray(3, c.createArrayOf("bigint", seq));
          ps.executeUpdate();
        }
        c.commit();
        commits.incrementAndGet();
        published.addAndGet(ids.length);
      }
    } catch (SQLException | RuntimeException e) {
      failure.compareAndSet(null, e);
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
