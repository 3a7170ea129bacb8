package dev.handoff.benchmarks.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.TestServers;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;

/**
 * End-to-end throughput, stream transport against list transport: {@code messages} rows are appended first, then a
 * relay and one consumer worker (batches of 100, a one-insert handler) are started and the clock runs until every
 * effect row exists. Variants alternate per round. Run:
 *
 * <pre>./mvnw -q -DskipTests package -pl benchmarks -am
 * java -cp benchmarks/target/handoff-benchmarks.jar dev.handoff.benchmarks.consumer.ListBenchmark \
 *     [rounds messages]</pre>
 *
 * <p>Uses the test servers (embedded PostgreSQL and Redis unless the environment names others).
 */
public final class ListBenchmark {

  private static final String SCHEMA = "bench_lists";
  private static final String PREFIX = "benchl";

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int messages = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    URI redisUri = TestServers.redis();
    HostAndPort redisAddress = new HostAndPort(redisUri.getHost(), redisUri.getPort());
    try (HikariDataSource ds = TestServers.newDataSource(SCHEMA, 8);
        RedisClient redis = TestServers.newRedisClient(Duration.ofSeconds(2))) {
      for (int round = 1; round <= rounds; round++) {
        for (boolean list : new boolean[] {false, true}) {
          reset(ds, redis);
          double rate = run(ds, redis, redisAddress, list, messages);
          System.out.printf("round %d %-6s %,8.0f msg/s (%,d messages, relay + 1 consumer worker, batch 100)%n",
              round, list ? "list" : "stream", rate, messages);
        }
      }
    }
    System.exit(0);
  }

  @SuppressWarnings("try") // the consumer runs while the block waits; closing it is all the block does with it
  private static double run(HikariDataSource ds, RedisClient redis, HostAndPort address, boolean list, int n)
      throws Exception {
    String topic = "payments";
    Outbox outbox = Outbox.builder().schema(SCHEMA).build();
    for (int done = 0; done < n; ) {
      try (Connection tx = ds.getConnection()) {
        tx.setAutoCommit(false);
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 500 && done + i < n; i++) {
          batch.add(Message.builder(topic, "payment.created").key("p" + (done + i))
              .payload("{\"amount_cents\":1250,\"currency\":\"EUR\"}").build());
        }
        outbox.appendAll(tx, batch);
        tx.commit();
        done += batch.size();
      }
    }
    MessageHandler handler = (tx, m) -> {
      try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + SCHEMA + ".ledger (message_id) VALUES (?)")) {
        ps.setObject(1, m.messageId());
        ps.executeUpdate();
      }
    };
    RelayBuilder relayBuilder = Relay.builder(ds, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA).keyPrefix(PREFIX).topic(topic)
        .idlePollInterval(Duration.ofMillis(50));
    if (list) {
      relayBuilder.listTransport(10_000);
    }
    long start = System.nanoTime();
    try (Relay relay = relayBuilder.build();
        AutoCloseable consumer = list
            ? startList(ds, address, topic, handler)
            : startStream(ds, address, topic, handler)) {
      relay.start();
      while (BenchSchema.count(ds, SCHEMA + ".ledger") < n) {
        Thread.sleep(10);
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  private static AutoCloseable startList(HikariDataSource ds, HostAndPort address, String topic, MessageHandler h) {
    ListConsumer c = ListConsumer.builder(ds, RedisConnectionSpec.of("redis://" + address)).schema(SCHEMA).keyPrefix(PREFIX).topic(topic).group("bench")
        .handler(h).batchSize(100).block(Duration.ofMillis(200)).build();
    c.start();
    return c;
  }

  private static AutoCloseable startStream(HikariDataSource ds, HostAndPort address, String topic, MessageHandler h) {
    StreamConsumer c = StreamConsumer.builder(ds, RedisConnectionSpec.of("redis://" + address)).schema(SCHEMA).keyPrefix(PREFIX).topic(topic)
        .group("bench").handler(h).batchSize(100).block(Duration.ofMillis(200)).build();
    c.start();
    return c;
  }



  private static void reset(HikariDataSource ds, RedisClient redis) throws Exception {
    BenchSchema.reset(ds, redis, SCHEMA, PREFIX, "CREATE TABLE " + SCHEMA + ".ledger (id bigserial PRIMARY KEY,"
        + " message_id uuid NOT NULL)");
  }
}
