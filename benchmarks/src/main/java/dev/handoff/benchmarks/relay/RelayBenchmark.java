package dev.handoff.benchmarks.relay;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Json;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XReadParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * Relay throughput on a 200,000-row backlog against a minimal hand-written loop doing the same SQL shape and a
 * pipelined XADD (at-least-once, no leases, no fencing), in the same run; then commit-to-XADD latency at a steady
 * 1,000 appends per second with NOTIFY wake-up. Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.relay.RelayBenchmark \
 *     [rows rounds latencySeconds]</pre>
 *
 * <p>Uses the test servers (embedded PostgreSQL and Redis unless the environment names others).
 */
public final class RelayBenchmark {

  private static final String SCHEMA = "bench_relay";
  private static final String PREFIX = "benchrelay";
  private static final byte[] PAYLOAD =
      "{\"payment_id\":\"pay-0000001\",\"account\":\"acct-42\",\"amount_cents\":1250,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);

  public static void main(String[] args) throws Exception {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    int latencySeconds = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    try (HikariDataSource ds = TestServers.newDataSource(null, 8);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(10))) {
      exec(ds, "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      HandoffMigrations.migrate(ds, SCHEMA);
      String key = StreamFormat.streamKey(PREFIX, "payments", 0);

      List<Double> relayRates = new ArrayList<>();
      List<Double> loopRates = new ArrayList<>();
      for (int r = 0; r < rounds; r++) {
        reset(ds, redis, key);
        fill(ds, rows);
        long start = System.nanoTime();
        try (Relay relay = Relay.builder(ds, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA).keyPrefix(PREFIX)
            .topic(TopicConfig.of("payments")).build()) {
          relay.relayOnce();
        }
        double relaySeconds = (System.nanoTime() - start) / 1e9;
        check(ds, redis, key, rows);
        relayRates.add(rows / relaySeconds);

        reset(ds, redis, key);
        fill(ds, rows);
        start = System.nanoTime();
        handWrittenLoop(ds, redis, key, 1000);
        double loopSeconds = (System.nanoTime() - start) / 1e9;
        check(ds, redis, key, rows);
        loopRates.add(rows / loopSeconds);
        System.out.printf("round %d: relay %.0f rows/s, hand-written loop %.0f rows/s%n", r + 1,
            rows / relaySeconds, rows / loopSeconds);
      }
      double relay = median(relayRates);
      double loop = median(loopRates);
      System.out.printf("%nBacklog of %,d rows, %d rounds (median): relay %.0f rows/s, hand-written loop %.0f rows/s,"
          + " ratio %.1f%%%n", rows, rounds, relay, loop, 100 * relay / loop);

      reset(ds, redis, key);
      latency(ds, redis, key, latencySeconds);
      exec(ds, "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      redis.del(key, key + ":relay");
    }
    System.exit(0);
  }

  private static void latency(HikariDataSource ds, RedisClient redis, String key, int seconds) throws Exception {
    Outbox outbox = Outbox.builder().schema(SCHEMA).build();
    Map<UUID, Long> committedAt = new ConcurrentHashMap<>();
    List<Long> latenciesMicros = java.util.Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean running = new AtomicBoolean(true);
    Thread reader = new Thread(() -> {
      StreamEntryID last = new StreamEntryID(0, 0);
      while (running.get()) {
        List<Map.Entry<String, List<StreamEntry>>> reply =
            redis.xread(XReadParams.xReadParams().block(200).count(1000), Map.of(key, last));
        if (reply == null) {
          continue;
        }
        long now = System.nanoTime();
        for (StreamEntry e : reply.get(0).getValue()) {
          last = e.getID();
          Long at = committedAt.remove(UUID.fromString(e.getFields().get(StreamFormat.MESSAGE_ID)));
          if (at != null) {
            latenciesMicros.add((now - at) / 1_000);
          }
        }
      }
    }, "latency-reader");
    reader.start();
    try (Relay relay = Relay.builder(ds, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA).keyPrefix(PREFIX)
        .topic(TopicConfig.of("payments")).build()) {
      relay.start();
      Thread.sleep(1000);
      long intervalNanos = 1_000_000;
      long next = System.nanoTime();
      long end = next + seconds * 1_000_000_000L;
      long warmupEnd = next + 2_000_000_000L;
      try (Connection tx = ds.getConnection()) {
        tx.setAutoCommit(false);
        while (System.nanoTime() < end) {
          long wait = next - System.nanoTime();
          if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
          }
          next += intervalNanos;
          UUID id = outbox.append(tx, Message.builder("payments", "payment.created").payload(PAYLOAD).build())
              .messageId();
          tx.commit();
          if (System.nanoTime() > warmupEnd) {
            committedAt.put(id, System.nanoTime());
          }
        }
      }
      Thread.sleep(1000);
    }
    running.set(false);
    reader.join();
    List<Long> xs = new ArrayList<>(latenciesMicros);
    xs.sort(null);
    System.out.printf("Commit-to-XADD latency at 1,000 appends/s for %d s (%,d samples after 2 s warm-up):"
            + " p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms%n", seconds, xs.size(),
        pct(xs, 0.50), pct(xs, 0.95), pct(xs, 0.99), xs.get(xs.size() - 1) / 1000.0);
  }

  private static double pct(List<Long> sorted, double p) {
    return sorted.get(Math.min(sorted.size() - 1, (int) (p * sorted.size()))) / 1000.0;
  }

  /**
   * The baseline: what a minimal at-least-once relay does. Select the next rows, XADD them (auto IDs) in one
   * pipeline, mark them published.
   */
  private static void handWrittenLoop(HikariDataSource ds, RedisClient redis, String key, int batch)
      throws SQLException {
    String select = "SELECT id, message_id, message_key, type, payload, headers::text, created_at FROM " + SCHEMA
        + ".outbox WHERE topic = 'payments' AND shard = 0 AND published_at IS NULL ORDER BY id LIMIT ?";
    // Records the ID Redis returned, as an at-least-once relay does.
    String mark = "UPDATE " + SCHEMA + ".outbox o SET published_at = now(), stream_ms = u.ms, stream_seq = u.seq"
        + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq) WHERE o.id = u.id";
    byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
    try (Connection c = ds.getConnection()) {
      while (true) {
        List<StreamMessage> messages = new ArrayList<>(batch);
        try (PreparedStatement ps = c.prepareStatement(select)) {
          ps.setInt(1, batch);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              messages.add(new StreamMessage(rs.getObject(2, UUID.class), rs.getLong(1), "payments",
                  rs.getString(4), rs.getString(3), Json.readStringMap(rs.getString(6)),
                  rs.getObject(7, OffsetDateTime.class).toInstant(), rs.getBytes(5)));
            }
          }
        }
        if (messages.isEmpty()) {
          return;
        }
        List<redis.clients.jedis.Response<byte[]>> replies = new ArrayList<>(messages.size());
        try (Pipeline p = redis.pipelined()) {
          for (StreamMessage m : messages) {
            replies.add(p.xadd(keyBytes, XAddParams.xAddParams(), StreamFormat.encode(m)));
          }
          p.sync();
        }
        Long[] ids = new Long[messages.size()];
        Long[] ms = new Long[messages.size()];
        Long[] seq = new Long[messages.size()];
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

  private static void fill(HikariDataSource ds, int rows) throws SQLException {
    Outbox outbox = Outbox.builder().schema(SCHEMA).build();
    try (Connection tx = ds.getConnection()) {
      tx.setAutoCommit(false);
      for (int done = 0; done < rows; ) {
        int n = Math.min(1000, rows - done);
        List<Message> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          batch.add(Message.builder("payments", "payment.created").key("pay-" + (done + i)).payload(PAYLOAD).build());
        }
        outbox.appendAll(tx, batch);
        tx.commit();
        done += n;
      }
    }
    exec(ds, "VACUUM ANALYZE " + SCHEMA + ".outbox");
  }

  private static void check(HikariDataSource ds, RedisClient redis, String key, int rows) throws SQLException {
    long len = redis.xlen(key);
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + SCHEMA + ".outbox WHERE published_at IS NULL")) {
      rs.next();
      if (len != rows || rs.getLong(1) != 0) {
        throw new IllegalStateException("expected " + rows + " entries and no unpublished rows, got " + len
            + " and " + rs.getLong(1));
      }
    }
  }

  private static void reset(HikariDataSource ds, RedisClient redis, String key) throws SQLException {
    exec(ds, "TRUNCATE " + SCHEMA + ".outbox, " + SCHEMA + ".relay_lease, " + SCHEMA + ".relay_member");
    redis.del(key, key + ":relay");
  }

  private static void exec(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static double median(List<Double> xs) {
    List<Double> sorted = new ArrayList<>(xs);
    sorted.sort(null);
    return sorted.get(sorted.size() / 2);
  }
}
