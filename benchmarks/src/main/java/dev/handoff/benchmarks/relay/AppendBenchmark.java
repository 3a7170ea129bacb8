package dev.handoff.benchmarks.relay;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.TestServers;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Append throughput against a raw JDBC insert of the same row, in the same run, interleaved so that drift of the
 * machine hits every variant alike. Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.relay.AppendBenchmark \
 *     [rounds seconds]</pre>
 *
 * <p>Uses the test servers (embedded PostgreSQL unless {@code HANDOFF_TEST_JDBC_URL} is set).
 */
public final class AppendBenchmark {

  private static final String SCHEMA = "bench_append";
  private static final byte[] PAYLOAD =
      "{\"payment_id\":\"pay-0000001\",\"account\":\"acct-42\",\"amount_cents\":1250,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);
  private static final String HEADERS = "{\"content-type\":\"application/json\"}";

  private interface Variant {
    /** Writes one transaction and returns the number of messages it wrote. */
    int run(Connection tx) throws SQLException;
  }

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 4;
    TestServers.Postgres pg = TestServers.postgres();
    try (HikariDataSource ds = TestServers.newDataSource(null, 2)) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      }
      HandoffMigrations.migrate(ds, SCHEMA);
      Outbox outbox = Outbox.builder().schema(SCHEMA).build();
      String rawSql = "INSERT INTO " + SCHEMA + ".outbox (message_id, topic, shard, message_key, type, payload, headers)"
          + " VALUES (?, ?, ?, ?, ?, ?, ?::jsonb)";

      Map<String, Variant> variants = new LinkedHashMap<>();
      variants.put("raw insert, 1/tx", tx -> {
        try (PreparedStatement ps = tx.prepareStatement(rawSql)) {
          bindRaw(ps);
          ps.executeUpdate();
        }
        return 1;
      });
      variants.put("append, 1/tx", tx -> {
        outbox.append(tx, message());
        return 1;
      });
      variants.put("raw batch insert, 100/tx", tx -> {
        try (PreparedStatement ps = tx.prepareStatement(rawSql)) {
          for (int i = 0; i < 100; i++) {
            bindRaw(ps);
            ps.addBatch();
          }
          ps.executeBatch();
        }
        return 100;
      });
      variants.put("appendAll, 100/tx", tx -> {
        List<Message> batch = new ArrayList<>(100);
        for (int i = 0; i < 100; i++) {
          batch.add(message());
        }
        outbox.appendAll(tx, batch);
        return 100;
      });

      Map<String, List<Double>> results = new LinkedHashMap<>();
      variants.keySet().forEach(k -> results.put(k, new ArrayList<>()));
      try (Connection tx = ds.getConnection()) {
        tx.setAutoCommit(false);
        for (Map.Entry<String, Variant> v : variants.entrySet()) {
          measure(tx, v.getValue(), 2);
        }
        for (int r = 0; r < rounds; r++) {
          for (Map.Entry<String, Variant> v : variants.entrySet()) {
            results.get(v.getKey()).add(measure(tx, v.getValue(), seconds));
            truncate(tx);
          }
        }
      }

      System.out.printf("%nAppend benchmark: %d rounds x %d s per variant, 1 thread, PostgreSQL %s%n",
          rounds, seconds, pg.jdbcUrl().replaceAll("password=[^&]*", "password=***"));
      System.out.printf("%-26s %14s %14s %14s%n", "variant", "median msg/s", "min msg/s", "max msg/s");
      for (Map.Entry<String, List<Double>> e : results.entrySet()) {
        List<Double> xs = new ArrayList<>(e.getValue());
        xs.sort(null);
        System.out.printf("%-26s %14.0f %14.0f %14.0f%n", e.getKey(), xs.get(xs.size() / 2), xs.get(0),
            xs.get(xs.size() - 1));
      }
      System.out.printf("append/raw at 1 per tx:   %.1f%%%n",
          100 * median(results.get("append, 1/tx")) / median(results.get("raw insert, 1/tx")));
      System.out.printf("append/raw at 100 per tx: %.1f%%%n",
          100 * median(results.get("appendAll, 100/tx")) / median(results.get("raw batch insert, 100/tx")));
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
      }
    }
    System.exit(0);
  }

  private static double median(List<Double> xs) {
    List<Double> sorted = new ArrayList<>(xs);
    sorted.sort(null);
    return sorted.get(sorted.size() / 2);
  }

  private static double measure(Connection tx, Variant variant, int seconds) throws SQLException {
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    long start = System.nanoTime();
    long messages = 0;
    while (System.nanoTime() < end) {
      messages += variant.run(tx);
      tx.commit();
    }
    return messages / ((System.nanoTime() - start) / 1e9);
  }

  private static void truncate(Connection tx) throws SQLException {
    try (Statement s = tx.createStatement()) {
      s.execute("TRUNCATE " + SCHEMA + ".outbox");
    }
    tx.commit();
  }

  private static Message message() {
    return Message.builder("payments", "payment.created")
        .key("pay-" + ThreadLocalRandom.current().nextInt(1_000_000))
        .jsonPayload(new String(PAYLOAD, StandardCharsets.UTF_8))
        .build();
  }

  private static void bindRaw(PreparedStatement ps) throws SQLException {
    ps.setObject(1, UUID.randomUUID());
    ps.setString(2, "payments");
    ps.setInt(3, 0);
    ps.setString(4, "pay-" + ThreadLocalRandom.current().nextInt(1_000_000));
    ps.setString(5, "payment.created");
    ps.setBytes(6, PAYLOAD);
    ps.setString(7, HEADERS);
  }
}
