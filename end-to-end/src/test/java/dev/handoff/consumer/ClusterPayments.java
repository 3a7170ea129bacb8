package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RelayListener;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.RedisClusterClient;

/**
 * Payments of one topic on a {@link RedisCluster}, end to end: a producer thread appends them through the outbox at
 * a steady pace, an in-process relay publishes them through a cluster client, a started stream consumer charges
 * each one in a table without a unique key (so a double charge is two rows), and the audit counts what happened.
 * The relay's and the consumer's listeners record what the tests assert on.
 */
final class ClusterPayments implements AutoCloseable {

  static final String TOPIC = "payments";
  static final int SHARDS = 8;
  static final String GROUP = "billing";

  final TestEnvironment env;
  final RedisCluster cluster;
  final RedisClusterClient redis;
  final OutcomeCounts outcomes = new OutcomeCounts();
  final List<Throwable> relayFailures = new CopyOnWriteArrayList<>();
  final Map<ShardId, AtomicLong> republished = new ConcurrentHashMap<>();
  final Map<ShardId, AtomicLong> trimmed = new ConcurrentHashMap<>();
  final AtomicInteger anomalies = new AtomicInteger();
  private final AtomicInteger appended = new AtomicInteger();
  private final Relay relay;
  private final StreamConsumer consumer;
  private Thread producer;
  private volatile Throwable producerFailure;

  /** Payments whose streams keep every entry ({@code trimStreams(false)}). */
  ClusterPayments(TestEnvironment env, RedisCluster cluster) {
    this(env, cluster, 0);
  }

  /**
   * Payments whose streams the relay trims right after publishing once {@code trimSlack} entries came since the
   * last trim, below what the group finished (0: never trims).
   */
  ClusterPayments(TestEnvironment env, RedisCluster cluster, int trimSlack) {
    this.env = env;
    this.cluster = cluster;
    this.redis = cluster.newClient();
    env.execute("CREATE TABLE " + env.schema() + ".charge (message_id uuid NOT NULL, payment_key text NOT NULL)");
    RelayBuilder relayBuilder = Relay.builder(env.dataSource(), cluster.spec()).schema(env.schema())
        .keyPrefix(env.keyPrefix()).topic(TopicConfig.of(TOPIC).withShards(SHARDS))
        .idlePollInterval(Duration.ofMillis(200)).listener(new RelayListener() {
          @Override
          public void failed(Throwable error) {
            relayFailures.add(error);
          }

          @Override
          public void streamLost(ShardId shard, long rows) {
            republished.computeIfAbsent(shard, s -> new AtomicLong()).addAndGet(rows);
          }

          @Override
          public void trimmed(ShardId shard, String minId, long evicted) {
            trimmed.computeIfAbsent(shard, s -> new AtomicLong()).addAndGet(evicted);
          }

          @Override
          public void anomaly(ShardId shard, int rows, String detail) {
            anomalies.addAndGet(rows);
          }
        });
    this.relay = (trimSlack > 0 ? relayBuilder.trimSlack(trimSlack) : relayBuilder.trimStreams(false)).build();
    this.consumer = StreamConsumer.builder(env.dataSource(), cluster.spec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(TOPIC).withShards(SHARDS)).group(GROUP).workers(2)
        .block(Duration.ofMillis(100)).minIdle(Duration.ofSeconds(2)).reclaimInterval(Duration.ofMillis(200))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).listener(outcomes)
        .handler((tx, m) -> {
          try (PreparedStatement ps = tx.prepareStatement(
              "INSERT INTO " + env.schema() + ".charge (message_id, payment_key) VALUES (?, ?)")) {
            ps.setObject(1, m.messageId());
            ps.setString(2, m.key());
            ps.executeUpdate();
          }
        }).build();
  }

  /** Starts the relay, the consumer and a producer of {@code total} payments, one per transaction every 5 ms. */
  void start(int total) {
    relay.start();
    consumer.start();
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(TOPIC).withShards(SHARDS)).build();
    producer = new Thread(() -> {
      try {
        for (int i = 0; i < total; i++) {
          try (Connection tx = env.dataSource().getConnection()) {
            tx.setAutoCommit(false);
            outbox.append(tx, Message.builder(TOPIC, "payment.captured").key("payment-" + i)
                .payload("{\"amount\":" + (i + 1) + "}").build());
            tx.commit();
          }
          appended.incrementAndGet();
          Thread.sleep(5);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception e) {
        producerFailure = e;
      }
    }, "payments-producer");
    producer.start();
  }

  int appended() {
    return appended.get();
  }

  /** Waits until at least {@code n} payments were appended. */
  void awaitAppended(int n) {
    ConsumerTestKit.await(n + " payments appended", Duration.ofSeconds(60), () -> appended.get() >= n);
  }

  /** The stream key of {@code shard}. */
  String streamKey(int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), TOPIC, shard);
  }

  /** The entries the relay confirmed in {@code shard}'s stream, as the database recorded them. */
  long confirmedAdded(int shard) {
    return env.queryLong("SELECT entries_added FROM relay_lease WHERE topic = ? AND shard = ?", TOPIC, shard);
  }

  /** Waits for the producer to finish and for every payment to be charged; returns how many were appended. */
  long awaitAllCharged(Duration deadline) throws InterruptedException {
    producer.join(deadline.toMillis());
    assertThat(producer.isAlive()).as("the producer finished").isFalse();
    assertThat(producerFailure).as("the producer's failure").isNull();
    long rows = env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", TOPIC);
    ConsumerTestKit.await("all " + rows + " payments charged and acknowledged", deadline,
        () -> distinctCharged() == rows && pendingTotal() == 0);
    return rows;
  }

  long charges() {
    return env.queryLong("SELECT count(*) FROM " + env.schema() + ".charge");
  }

  long distinctCharged() {
    return env.queryLong("SELECT count(DISTINCT message_id) FROM " + env.schema() + ".charge");
  }

  /** Payments charged more than once: must be 0. */
  long doubleCharges() {
    return env.queryLong("SELECT count(*) FROM (SELECT message_id FROM " + env.schema()
        + ".charge GROUP BY message_id HAVING count(*) > 1) d");
  }

  /** Outbox rows whose message was never charged: must be 0. */
  long uncharged() {
    return env.queryLong("SELECT count(*) FROM outbox o WHERE o.topic = ? AND NOT EXISTS (SELECT 1 FROM "
        + env.schema() + ".charge c WHERE c.message_id = o.message_id)", TOPIC);
  }

  long pendingTotal() {
    long total = 0;
    for (int s = 0; s < SHARDS; s++) {
      if (redis.exists(streamKey(s))) {
        total += redis.xpending(streamKey(s), GROUP).getTotal();
      }
    }
    return total;
  }

  long streamEntries() {
    long total = 0;
    for (int s = 0; s < SHARDS; s++) {
      total += redis.exists(streamKey(s)) ? redis.xlen(streamKey(s)) : 0;
    }
    return total;
  }

  /** The sum of every shard's {@code added} counter in Redis. */
  long redisAdded() {
    long total = 0;
    for (int s = 0; s < SHARDS; s++) {
      String added = redis.hget(StreamFormat.relayKey(streamKey(s)), "added");
      total += added == null ? 0 : Long.parseLong(added);
    }
    return total;
  }

  long deadLetters() {
    return consumer.status().deadLetters();
  }

  /** Which shard a payment appended by {@link #start} went to: the outbox's own record. */
  long shardRows(int shard) {
    return env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND shard = ?", TOPIC, shard);
  }

  @Override
  public void close() throws InterruptedException {
    if (producer != null) {
      producer.interrupt();
      producer.join(10_000);
    }
    consumer.close();
    relay.close();
    redis.close();
  }
}
