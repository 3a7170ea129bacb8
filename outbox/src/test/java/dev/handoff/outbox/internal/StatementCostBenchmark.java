package dev.handoff.outbox.internal;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.TopicConfig;
import dev.handoff.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.RedisClient;

/**
 * What the unnamed statements ({@link Statements}) cost on a direct connection, against pgjdbc's defaults (named
 * server-side statements after 5 executions, as handoff ran before), alternating in one run: single-message appends
 * each in its own committed transaction (blocks of 200, the two ways taking turns), and the relay draining a
 * backlog with {@code relayOnce()} (rounds taking turns; the median of each). Point
 * {@code HANDOFF_TEST_JDBC_URL} at a durable PostgreSQL; run with the test class path:
 *
 * <pre>java -cp ... dev.handoff.outbox.internal.StatementCostBenchmark [rows appends rounds]</pre>
 */
public final class StatementCostBenchmark {

  private static final String SCHEMA = "bench_statements";
  private static final String PREFIX = "benchstatements";
  private static final byte[] PAYLOAD =
      "{\"payment_id\":\"pay-0000001\",\"account\":\"acct-42\",\"amount_cents\":1250,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);

  public static void main(String[] args) throws Exception {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int appends = args.length > 1 ? Integer.parseInt(args[1]) : 3_000;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    String key = StreamFormat.streamKey(PREFIX, "payments", 0);
    try (HikariDataSource ds = TestServers.newDataSource(null, 8);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(10))) {
      exec(ds, "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      HandoffMigrations.migrate(ds, SCHEMA);
      // Appends: blocks of transactions, the two ways alternating, so that load from elsewhere hits both alike.
      double[] appendNanos = new double[2];
      int block = 200;
      reset(ds, redis, key);
      appends(ds, block); // warm-up
      for (int b = 0; b < 2 * (appends / block); b++) {
        boolean named = b % 2 == 1;
        Statements.driverDefaultsForBenchmark = named;
        appendNanos[named ? 1 : 0] += block / appends(ds, block) * 1e9;
      }
      double appendUnnamed = (appends / block) * block / (appendNanos[0] / 1e9);
      double appendNamed = (appends / block) * block / (appendNanos[1] / 1e9);
      System.out.printf("single-message append transactions: %.0f/s unnamed vs %.0f/s named (ratio %.2f)%n",
          appendUnnamed, appendNamed, appendUnnamed / appendNamed);

      List<Double> relayUnnamed = new ArrayList<>();
      List<Double> relayNamed = new ArrayList<>();
      for (int r = 0; r < 2 * rounds; r++) {
        boolean named = r % 2 == 1;
        Statements.driverDefaultsForBenchmark = named;
        reset(ds, redis, key);
        fill(ds, rows);
        long start = System.nanoTime();
        try (Relay relay = Relay.builder(ds, redis).schema(SCHEMA).keyPrefix(PREFIX)
            .topic(TopicConfig.of("payments")).build()) {
          relay.relayOnce();
        }
        double relayRate = rows / ((System.nanoTime() - start) / 1e9);
        if (redis.xlen(key) != rows) {
          throw new IllegalStateException("expected " + rows + " entries, got " + redis.xlen(key));
        }
        (named ? relayNamed : relayUnnamed).add(relayRate);
        System.out.printf("relay round %d %s: %.0f rows/s%n", r / 2 + 1, named ? "named" : "unnamed", relayRate);
      }
      System.out.printf("%nrelay on a %,d-row backlog, median of %d rounds: %.0f rows/s unnamed vs %.0f named"
              + " (ratio %.2f); appends %.0f/s vs %.0f/s (ratio %.2f)%n",
          rows, rounds, median(relayUnnamed), median(relayNamed), median(relayUnnamed) / median(relayNamed),
          appendUnnamed, appendNamed, appendUnnamed / appendNamed);
      exec(ds, "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      redis.del(key, key + ":relay");
    }
    System.exit(0);
  }

  /**
   * Single-message appends, each committed, on one connection of the application's pool (whose COMMIT stays the
   * driver's: only the append's statement is handoff's): the rate in transactions per second.
   */
  private static double appends(HikariDataSource ds, int n) throws SQLException {
    Outbox outbox = Outbox.builder().schema(SCHEMA).build();
    try (Connection tx = ds.getConnection()) {
      tx.setAutoCommit(false);
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        outbox.append(tx, Message.builder("payments", "payment.created").key("pay-" + i).payload(PAYLOAD).build());
        tx.commit();
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  private static void fill(HikariDataSource ds, int rows) throws SQLException {
    exec(ds, "INSERT INTO " + SCHEMA + ".outbox (message_id, topic, shard, message_key, type, payload)"
        + " SELECT gen_random_uuid(), 'payments', 0, 'pay-' || i, 'payment.created', '"
        + new String(PAYLOAD, StandardCharsets.UTF_8) + "'::bytea FROM generate_series(1, " + rows + ") i");
    exec(ds, "VACUUM ANALYZE " + SCHEMA + ".outbox");
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
