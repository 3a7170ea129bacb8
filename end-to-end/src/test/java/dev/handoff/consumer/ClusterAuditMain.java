package dev.handoff.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.ShardId;
import dev.handoff.core.TopicConfig;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RelayFaults;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import redis.clients.jedis.HostAndPort;

/**
 * Run by {@link ClusterAuditTest} in a JVM of its own (started with the test class path), so that the test can
 * SIGKILL it: a relay or a consumer of topic {@code payments} (8 shards) on a Redis Cluster, until SIGTERM.
 * Arguments: role ({@code relay} or {@code consumer}), transport ({@code stream} or {@code list}), JDBC URL, user,
 * password ({@code null} for none), schema, key prefix, cluster seeds ({@code host:port,...}), relay owner or
 * consumer name, and optionally a count after which the process stalls for good, so that a SIGKILL lands at the
 * worst moment: a relay after writing that many rows to Redis (written, not yet recorded in the outbox), a consumer
 * after handling that many messages (inside a batch transaction, entries held).
 *
 * <p>The consumer's handler INSERTs one {@code charge} row per message, keyed by the payment ID (the message key),
 * into a table without a unique constraint: a message handled twice would show as two rows.
 */
final class ClusterAuditMain {

  static final TopicConfig TOPIC = TopicConfig.of("payments").withShards(8);
  static final String GROUP = "billing";

  private ClusterAuditMain() {}

  public static void main(String[] args) throws Exception {
    String role = args[0];
    boolean list = args[1].equals("list");
    HikariDataSource db = new HikariDataSource();
    db.setJdbcUrl(args[2]);
    if (!args[3].equals("null")) {
      db.setUsername(args[3]);
    }
    if (!args[4].equals("null")) {
      db.setPassword(args[4]);
    }
    db.setSchema(args[5]);
    db.setMaximumPoolSize(6);
    db.setPoolName(role + "-" + args[8]);
    String prefix = args[6];
    List<HostAndPort> seeds = Arrays.stream(args[7].split(",")).map(HostAndPort::from).toList();
    String name = args[8];

    CountDownLatch stopped = new CountDownLatch(1);
    AutoCloseable running;
    int stallAfter = args.length > 9 ? Integer.parseInt(args[9]) : 0;
    if (role.equals("relay")) {
      RelayBuilder builder = Relay.builder(db, RedisConnectionSpec.builder("redis://" + seeds.get(0)).cluster(seeds)
          .build()).schema(args[5]).keyPrefix(prefix).topic(TOPIC)
          .owner(name).leaseTtl(Duration.ofSeconds(2)).idlePollInterval(Duration.ofMillis(200))
          .trimStreams(false).faults(stallAfterWriting(stallAfter));
      Relay relay = (list ? builder.listTransport(RelayBuilder.DEFAULT_LIST_CAPACITY) : builder).build();
      relay.start();
      running = relay;
    } else {
      AtomicInteger handled = new AtomicInteger();
      MessageHandler charge = (tx, m) -> {
        if (stallAfter > 0 && handled.incrementAndGet() > stallAfter) {
          // Holds this worker's batch (read, marker inserted, not committed) until the test SIGKILLs the process.
          System.out.println("stalling in the handler after " + stallAfter + " messages");
          Thread.sleep(Long.MAX_VALUE);
        }
        try (PreparedStatement insert = tx.prepareStatement("INSERT INTO charge (payment_id) VALUES (?)")) {
          insert.setString(1, m.key());
          insert.executeUpdate();
        }
      };
      HandoffConsumer consumer;
      if (list) {
        ListConsumer c = ListConsumer.builder(db, RedisConnectionSpec.builder("redis://" + seeds.get(0)).cluster(seeds).build()).schema(args[5])
            .keyPrefix(prefix).topic(TOPIC).group(GROUP).consumerName(name).workers(2).batchSize(50)
            .block(Duration.ofMillis(200)).heartbeatTtl(Duration.ofSeconds(3)).handler(charge).build();
        c.start();
        consumer = c;
      } else {
        StreamConsumer c = StreamConsumer.builder(db, RedisConnectionSpec.builder("redis://" + seeds.get(0)).cluster(seeds).build()).schema(args[5])
            .keyPrefix(prefix).topic(TOPIC).group(GROUP).consumerName(name).workers(2).batchSize(50)
            .block(Duration.ofMillis(200)).minIdle(Duration.ofSeconds(5)).handler(charge).build();
        c.start();
        consumer = c;
      }
      running = consumer;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        running.close();
        db.close();
      } catch (Exception e) {
        e.printStackTrace();
      } finally {
        stopped.countDown();
      }
    }));
    System.out.println("started " + role + " " + name);
    stopped.await();
  }

  /**
   * Stalls the relay's thread for good once it wrote {@code rows} rows to Redis, right after a write and before the
   * database records it, so that a SIGKILL leaves rows in Redis that the outbox does not know were published.
   */
  private static RelayFaults stallAfterWriting(int rows) {
    AtomicInteger written = new AtomicInteger();
    return new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int count) {
        if (rows > 0 && written.addAndGet(count) >= rows) {
          System.out.println("stalling after writing " + written.get() + " rows, the last " + count + " to " + shard);
          try {
            Thread.sleep(Long.MAX_VALUE);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stalled", e);
          }
        }
      }
    };
  }
}
