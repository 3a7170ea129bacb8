package dev.handoff.benchmarks.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.TestServers;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.RedisClient;

/**
 * A group ordered per shard against the same group unordered: 8 shards, one consumer of 4 workers, batches of 100, a
 * one-insert handler, a relay; variants alternate per round. Two figures per variant: the flat-out rate (a backlog
 * of {@code messages} payments of 500 keys appended first, the clock running until every effect exists), and the
 * commit-to-charge latency at 2,000 payments/s from 32 sessions of one payment per transaction (the handler records
 * {@code clock_timestamp()} against the message's {@code createdAt}, the producer's transaction time). Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.consumer.OrderedBenchmark \
 *     [rounds messages latencySeconds]</pre>
 *
 * <p>Uses the test servers (embedded PostgreSQL and Redis unless {@code HANDOFF_TEST_JDBC_URL} and
 * {@code HANDOFF_TEST_REDIS_URL} name others); give it a durable PostgreSQL, as docs/performance.md does.
 */
public final class OrderedBenchmark {

  private static final String SCHEMA = "bench_ordered";
  private static final String PREFIX = "bencho";
  private static final TopicConfig TOPIC = TopicConfig.of("payments").withShards(8);
  private static final int WORKERS = 4;
  private static final int RATE = 2_000;
  private static final int SESSIONS = 32;

  private OrderedBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 40_000;
    int latencySeconds = args.length > 2 ? Integer.parseInt(args[2]) : 15;
    try (HikariDataSource ds = TestServers.newDataSource(SCHEMA, 48);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      System.out.println("durability: " + settings(ds));
      for (int round = 1; round <= rounds; round++) {
        for (boolean ordered : new boolean[] {false, true}) {
          reset(ds, redis);
          appendBacklog(ds, messages);
          double rate = flatOut(ds, ordered, messages);
          reset(ds, redis);
          double[] latency = paced(ds, ordered, latencySeconds);
          System.out.printf("round %d %-9s flat out %,7.0f msg/s (%,d payments of 500 keys); at %,d/s from %d"
                  + " sessions: commit to charge p50 %.1f ms, p99 %.1f ms, max %.1f ms (%,d payments)%n", round,
              ordered ? "ordered" : "unordered", rate, messages, RATE, SESSIONS, latency[0], latency[1], latency[2],
              (long) latency[3]);
        }
      }
    }
    System.exit(0);
  }

  private static StreamConsumer consumer(HikariDataSource ds, boolean ordered) {
    MessageHandler charge = (tx, m) -> {
      try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + SCHEMA + ".charge (message_id, key,"
          + " latency_ms) VALUES (?, ?, extract(epoch FROM clock_timestamp() - ?) * 1000)")) {
        ps.setObject(1, m.messageId());
        ps.setString(2, m.key());
        ps.setTimestamp(3, Timestamp.from(m.createdAt()));
        ps.executeUpdate();
      }
    };
    StreamConsumer c = StreamConsumer.builder(ds, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA)
        .keyPrefix(PREFIX).topic(TOPIC).group("bench").workers(WORKERS).batchSize(100)
        .block(Duration.ofMillis(200)).ordering(ordered ? Ordering.perShard() : Ordering.NONE).handler(charge)
        .build();
    c.start();
    return c;
  }

  private static Relay relay(HikariDataSource ds) {
    Relay relay = Relay.builder(ds, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA).keyPrefix(PREFIX)
        .topic(TOPIC).idlePollInterval(Duration.ofMillis(50)).build();
    relay.start();
    return relay;
  }

  @SuppressWarnings("try") // the relay and the consumer run while the block waits; closing them is all it does
  private static double flatOut(HikariDataSource ds, boolean ordered, int n) throws Exception {
    long start = System.nanoTime();
    try (Relay relay = relay(ds); StreamConsumer consumer = consumer(ds, ordered)) {
      while (BenchSchema.count(ds, SCHEMA + ".charge") < n) {
        Thread.sleep(10);
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  /** 2,000 payments/s from 32 sessions, one payment per transaction; p50, p99, max and count of the latencies. */
  @SuppressWarnings("try") // as in flatOut
  private static double[] paced(HikariDataSource ds, boolean ordered, int seconds) throws Exception {
    Outbox outbox = Outbox.builder().schema(SCHEMA).topic(TOPIC).build();
    AtomicLong sent = new AtomicLong();
    long periodNanos = TimeUnit.SECONDS.toNanos(1) * SESSIONS / RATE;
    try (Relay relay = relay(ds); StreamConsumer consumer = consumer(ds, ordered)) {
      ExecutorService sessions = Executors.newFixedThreadPool(SESSIONS);
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      for (int s = 0; s < SESSIONS; s++) {
        int session = s;
        sessions.execute(() -> {
          long next = System.nanoTime() + session * periodNanos / SESSIONS;
          int i = 0;
          while (next < end) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
              java.util.concurrent.locks.LockSupport.parkNanos(wait);
            }
            try (Connection tx = ds.getConnection()) {
              tx.setAutoCommit(false);
              outbox.append(tx, Message.builder(TOPIC.name(), "payment.created").key("k" + session + "-" + (i++ % 16))
                  .payload("{\"amount_cents\":1250}").build());
              tx.commit();
              sent.incrementAndGet();
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
            next += periodNanos;
          }
        });
      }
      sessions.shutdown();
      sessions.awaitTermination(seconds + 60L, TimeUnit.SECONDS);
      while (BenchSchema.count(ds, SCHEMA + ".charge") < sent.get()) {
        Thread.sleep(10);
      }
    }
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),"
            + " percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms), max(latency_ms), count(*) FROM " + SCHEMA
            + ".charge")) {
      rs.next();
      return new double[] {rs.getDouble(1), rs.getDouble(2), rs.getDouble(3), rs.getLong(4)};
    }
  }

  private static void appendBacklog(HikariDataSource ds, int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(SCHEMA).topic(TOPIC).build();
    for (int done = 0; done < n; ) {
      try (Connection tx = ds.getConnection()) {
        tx.setAutoCommit(false);
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 500 && done + i < n; i++) {
          batch.add(Message.builder(TOPIC.name(), "payment.created").key("k" + ((done + i) % 500))
              .payload("{\"amount_cents\":1250}").build());
        }
        outbox.appendAll(tx, batch);
        tx.commit();
        done += batch.size();
      }
    }
  }

  private static String settings(HikariDataSource ds) throws Exception {
    StringBuilder out = new StringBuilder();
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT name, setting FROM pg_settings WHERE name IN ('fsync',"
            + " 'synchronous_commit', 'full_page_writes') ORDER BY name")) {
      while (rs.next()) {
        out.append(rs.getString(1)).append('=').append(rs.getString(2)).append(' ');
      }
    }
    return out.toString().strip();
  }



  private static void reset(HikariDataSource ds, RedisClient redis) throws Exception {
    BenchSchema.reset(ds, redis, SCHEMA, PREFIX, "CREATE TABLE " + SCHEMA + ".charge (id bigserial PRIMARY KEY,"
        + " message_id uuid NOT NULL, key text, latency_ms double precision)");
  }
}
