package dev.handoff.benchmarks.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestServers;
import java.net.URI;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Relay and consumer throughput on one Redis server against a Redis Cluster of three masters (each with a replica),
 * on the same machine, PostgreSQL and settings: {@code rows} outbox rows over 8 shards are published by one relay
 * ({@code relayOnce()} until nothing is left: its publish rate), then consumed by one consumer of 2 workers, batches
 * of 100, an inbox marker and nothing else per message (its consume rate). Targets are interleaved per round. Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * HANDOFF_TEST_JDBC_URL='jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres' \
 *     java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.consumer.ClusterThroughputBenchmark \
 *     [rounds rows]</pre>
 */
public final class ClusterThroughputBenchmark {

  private static final String SCHEMA = "bench_cluster";
  private static final TopicConfig TOPIC = TopicConfig.of("payments").withShards(8);

  private record Target(String name, Supplier<UnifiedJedis> client, HostAndPort server, Set<HostAndPort> seeds) {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int rows = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    TestServers.postgres();
    URI single = TestServers.redis();
    try (RedisCluster cluster = RedisCluster.start();
        HikariDataSource ds = TestServers.newDataSource(null, 8)) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SHOW fsync")) {
        rs.next();
        System.out.println("PostgreSQL fsync=" + rs.getString(1) + ", " + rows + " rows over 8 shards, " + rounds
            + " rounds");
      }
      List<Target> targets = List.of(
          new Target("1 Redis server", () -> RedisClient.create(single.getHost(), single.getPort()),
              new HostAndPort(single.getHost(), single.getPort()), Set.of()),
          new Target("cluster, 3 masters", cluster::newClient, cluster.masters().get(0), cluster.seeds()));
      Map<String, List<double[]>> results = new LinkedHashMap<>();
      for (int round = 0; round < rounds; round++) {
        for (Target t : targets) {
          double[] r = run(ds, t, rows, "bench" + round + t.seeds().size());
          results.computeIfAbsent(t.name(), k -> new ArrayList<>()).add(r);
          System.out.printf("round %d %-20s relay %,8.0f rows/s   consumer %,8.0f msgs/s%n", round, t.name(), r[0],
              r[1]);
        }
      }
      System.out.println();
      System.out.println("| target | relay rows/s (median, min-max) | consumer msgs/s (median, min-max) |");
      System.out.println("|---|---|---|");
      results.forEach((name, rs) -> System.out.printf("| %s | %s | %s |%n", name, summary(rs, 0), summary(rs, 1)));
    }
  }

  private static double[] run(HikariDataSource ds, Target t, int rows, String prefix) throws Exception {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
    }
    HandoffMigrations.migrate(ds, SCHEMA);
    Outbox outbox = Outbox.builder().schema(SCHEMA).topic(TOPIC).build();
    try (Connection tx = ds.getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < rows; i++) {
        batch.add(Message.builder("payments", "payment.created").key("pay-" + i).payload("{\"n\":" + i + "}")
            .build());
        if (batch.size() == 500) {
          outbox.appendAll(tx, batch);
          tx.commit();
          batch.clear();
        }
      }
      if (!batch.isEmpty()) {
        outbox.appendAll(tx, batch);
        tx.commit();
      }
    }
    double relayRate;
    RedisConnectionSpec redis = RedisConnectionSpec.builder("redis://" + t.server()).cluster(t.seeds()).build();
    try (Relay relay = Relay.builder(ds, redis).schema(SCHEMA).keyPrefix(prefix).topic(TOPIC).build()) {
      long start = System.nanoTime();
      long published = 0;
      while (published < rows) {
        published += relay.relayOnce().published();
      }
      relayRate = rows / ((System.nanoTime() - start) / 1e9);
    }
    double consumeRate;
    try (StreamConsumer consumer = StreamConsumer.builder(ds, redis).schema(SCHEMA)
        .keyPrefix(prefix).topic(TOPIC).group("bench").workers(2).batchSize(100).handler((tx, m) -> { })
        .build()) {
      long start = System.nanoTime();
      consumer.start();
      while (count(ds) < rows) {
        Thread.sleep(5);
      }
      consumeRate = rows / ((System.nanoTime() - start) / 1e9);
    }
    return new double[] {relayRate, consumeRate};
  }

  private static long count(HikariDataSource ds) throws Exception {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + SCHEMA + ".inbox")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String summary(List<double[]> runs, int column) {
    List<Double> values = new ArrayList<>();
    runs.forEach(r -> values.add(r[column]));
    Collections.sort(values);
    return String.format("%,.0f (%,.0f-%,.0f)", values.get(values.size() / 2), values.get(0),
        values.get(values.size() - 1));
  }

  private ClusterThroughputBenchmark() {}
}
