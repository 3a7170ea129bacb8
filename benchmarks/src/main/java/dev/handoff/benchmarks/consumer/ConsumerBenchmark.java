package dev.handoff.benchmarks.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.FailureIsolation;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.testing.TestServers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.XAddParams;

/**
 * Consumer throughput with a ledger-like effect (one insert per message), batches of 100, against two database-only
 * baselines doing the same inserts (inbox marker + ledger row per message): (a) one transaction per message and
 * (b) a raw JDBC batch of 100 messages per transaction. The consumer runs its whole path (XREADGROUP COUNT 100,
 * marker insert, handler, commit, XACK) on one worker; the baselines run on one thread. Variants are interleaved
 * per round so that drift of the machine hits all alike. Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.consumer.ConsumerBenchmark \
 *     [rounds messages]</pre>
 *
 * <p>Uses the test servers (embedded PostgreSQL and Redis 7.0.15 unless the environment names others).
 */
public final class ConsumerBenchmark {

  private static final String SCHEMA = "bench_consume";
  private static final String TOPIC = "payments";
  private static final String PREFIX = "bench";
  private static final byte[] PAYLOAD =
      "{\"payment_id\":\"pay-0000001\",\"account\":\"acct-42\",\"amount_cents\":1250,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);
  private static final String LEDGER_INSERT =
      "INSERT INTO " + SCHEMA + ".ledger (message_id, account, amount_cents) VALUES (?, ?, ?)";
  private static final String MARKER_INSERT = "INSERT INTO " + SCHEMA + ".inbox (consumer_group, message_id,"
      + " stream_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";

  private interface Variant {
    /** Processes {@code n} messages; returns messages per second. */
    double run(int n) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    TestServers.Postgres pg = TestServers.postgres();
    URI redisUri = TestServers.redis();
    try (HikariDataSource ds = TestServers.newDataSource(null, 4);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      }
      HandoffMigrations.migrate(ds, SCHEMA);
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE " + SCHEMA + ".ledger (id bigserial PRIMARY KEY, message_id uuid NOT NULL,"
            + " account text NOT NULL, amount_cents bigint NOT NULL)");
      }

      Map<String, Variant> variants = new LinkedHashMap<>();
      variants.put("(a) 1 msg/tx, JDBC", n -> perMessage(ds, n));
      variants.put("(b) JDBC batch 100/tx", n -> rawBatch(ds, n));
      variants.put("consumer, optimistic batch", n -> consumer(ds, redis, redisUri, n,
          FailureIsolation.OPTIMISTIC_BATCH));
      variants.put("consumer, savepoints", n -> consumer(ds, redis, redisUri, n,
          FailureIsolation.SAVEPOINT_PER_MESSAGE));
      variants.put("consumer, batch handler", n -> consumer(ds, redis, redisUri, n, null));

      Map<String, List<Double>> results = new LinkedHashMap<>();
      variants.keySet().forEach(k -> results.put(k, new ArrayList<>()));
      for (Map.Entry<String, Variant> v : variants.entrySet()) {
        v.getValue().run(Math.min(2_000, messages)); // warm-up
        reset(ds, redis);
      }
      for (int r = 0; r < rounds; r++) {
        for (Map.Entry<String, Variant> v : variants.entrySet()) {
          results.get(v.getKey()).add(v.getValue().run(messages));
          reset(ds, redis);
        }
      }

      System.out.printf("%nConsumer benchmark: %d rounds x %d messages per variant, 1 thread/worker, batch 100,"
          + " PostgreSQL %s, Redis %s%n", rounds, messages,
          pg.jdbcUrl().replaceAll("password=[^&]*", "password=***"), redisUri);
      System.out.printf("%-28s %14s %14s %14s%n", "variant", "median msg/s", "min msg/s", "max msg/s");
      for (Map.Entry<String, List<Double>> e : results.entrySet()) {
        List<Double> xs = new ArrayList<>(e.getValue());
        xs.sort(null);
        System.out.printf("%-28s %14.0f %14.0f %14.0f%n", e.getKey(), xs.get(xs.size() / 2), xs.get(0),
            xs.get(xs.size() - 1));
      }
      double a = median(results.get("(a) 1 msg/tx, JDBC"));
      double b = median(results.get("(b) JDBC batch 100/tx"));
      double opt = median(results.get("consumer, optimistic batch"));
      double sp = median(results.get("consumer, savepoints"));
      System.out.printf("consumer (optimistic) / (b): %.0f%%   / (a): %.1fx%n", 100 * opt / b, opt / a);
      System.out.printf("consumer (savepoints) / (b): %.0f%%   / (a): %.1fx%n", 100 * sp / b, sp / a);
      double bh = median(results.get("consumer, batch handler"));
      System.out.printf("consumer (batch handler) / (b): %.0f%%   / (a): %.1fx%n", 100 * bh / b, bh / a);
      System.out.printf("optimistic / savepoints: %.2fx%n", opt / sp);
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      }
    }
    System.exit(0);
  }

  private static double perMessage(HikariDataSource ds, int n) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        UUID id = UUID.randomUUID();
        try (PreparedStatement marker = c.prepareStatement(MARKER_INSERT);
            PreparedStatement ledger = c.prepareStatement(LEDGER_INSERT)) {
          bindMarker(marker, id, i);
          marker.executeUpdate();
          bindLedger(ledger, id);
          ledger.executeUpdate();
        }
        c.commit();
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  private static double rawBatch(HikariDataSource ds, int n) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      long start = System.nanoTime();
      for (int done = 0; done < n; done += 100) {
        try (PreparedStatement marker = c.prepareStatement(MARKER_INSERT);
            PreparedStatement ledger = c.prepareStatement(LEDGER_INSERT)) {
          for (int i = 0; i < 100; i++) {
            UUID id = UUID.randomUUID();
            bindMarker(marker, id, done + i);
            marker.addBatch();
            bindLedger(ledger, id);
            ledger.addBatch();
          }
          marker.executeBatch();
          ledger.executeBatch();
        }
        c.commit();
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  /** The consumer's whole path; {@code isolation == null} means a batch handler (one JDBC batch per batch). */
  private static double consumer(HikariDataSource ds, RedisClient redis, URI redisUri, int n,
      FailureIsolation isolation) throws Exception {
    byte[] key = StreamFormat.streamKey(PREFIX, TOPIC, 0).getBytes(StandardCharsets.UTF_8);
    try (var pipeline = redis.pipelined()) {
      for (int i = 0; i < n; i++) {
        pipeline.xadd(key, XAddParams.xAddParams(), StreamFormat.encode(new StreamMessage(UUID.randomUUID(), i,
            TOPIC, "payment.created", "pay-" + i, Map.of(), Instant.now(), PAYLOAD)));
      }
      pipeline.sync();
    }
    AtomicLong settled = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    StreamConsumerBuilder builder = StreamConsumer.builder(ds, RedisConnectionSpec.of(redisUri))
        .schema(SCHEMA)
        .keyPrefix(PREFIX)
        .topic(TOPIC)
        .group("ledger")
        .workers(1)
        .batchSize(100)
        .block(Duration.ofMillis(100));
    if (isolation == null) {
      builder.batchHandler((tx, batch) -> {
        try (PreparedStatement ledger = tx.prepareStatement(LEDGER_INSERT)) {
          for (InboundMessage m : batch) {
            bindLedger(ledger, m.messageId());
            ledger.addBatch();
          }
          ledger.executeBatch();
        }
      });
    } else {
      builder.failureIsolation(isolation).handler((tx, m) -> {
        try (PreparedStatement ledger = tx.prepareStatement(LEDGER_INSERT)) {
          bindLedger(ledger, m.messageId());
          ledger.executeUpdate();
        }
      });
    }
    StreamConsumer consumer = builder
        .listener(new ConsumerListener() {
          @Override
          public void batchCommitted(int size, Duration elapsed) {
            if (settled.addAndGet(size) >= n) {
              done.countDown();
            }
          }
        })
        .build();
    long start = System.nanoTime();
    consumer.start();
    if (!done.await(5, TimeUnit.MINUTES)) {
      throw new IllegalStateException("consumer did not finish " + n + " messages: " + settled.get());
    }
    double rate = n / ((System.nanoTime() - start) / 1e9);
    consumer.close(Duration.ofSeconds(10));
    return rate;
  }

  private static void bindMarker(PreparedStatement ps, UUID id, int i) throws SQLException {
    ps.setString(1, "ledger");
    ps.setObject(2, id);
    ps.setString(3, "1-" + i);
  }

  private static void bindLedger(PreparedStatement ps, UUID id) throws SQLException {
    ps.setObject(1, id);
    ps.setString(2, "acct-42");
    ps.setLong(3, 1250);
  }

  private static void reset(HikariDataSource ds, RedisClient redis) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("TRUNCATE " + SCHEMA + ".ledger, " + SCHEMA + ".inbox");
    }
    redis.del(StreamFormat.streamKey(PREFIX, TOPIC, 0));
  }

  private static double median(List<Double> xs) {
    List<Double> sorted = new ArrayList<>(xs);
    sorted.sort(null);
    return sorted.get(sorted.size() / 2);
  }
}
