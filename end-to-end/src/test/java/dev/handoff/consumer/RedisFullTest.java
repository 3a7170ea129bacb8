package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.Health;
import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxFullException;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.args.ListDirection;

/**
 * Redis at its {@code maxmemory} with {@code noeviction}, the setting of every queue deployment, on a private
 * server: it refuses the relay's new entries, while reading, acknowledging and deleting still run. Nothing an
 * operator does is needed for it to drain: the consumers finish what the streams hold, the relay trims it on its
 * next refused cycle, and publishing resumes.
 */
@HandoffTest
class RedisFullTest {

  /**
   * Room above what the empty server uses: about 18,000 entries of the payloads below, and several times the
   * request of one full batch (1,000 rows), which Redis counts against maxmemory while it runs the script.
   */
  private static final long HEADROOM_BYTES = 5_000_000;
  private static final String PAYLOAD = "{\"cents\":1250,\"note\":\"" + "x".repeat(120) + "\"}";
  /** The bound the docs state for a full Redis to drain once consumers run; a deadline here, not a timing claim. */
  private static final Duration DRAIN_BOUND = Duration.ofSeconds(120);

  private final TestEnvironment env;

  RedisFullTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aGroupWithABacklogReadsAndAcknowledgesWhileRedisIsFullAndTheRelayTrimsWhatItFinished() throws Exception {
    Fixture f = onPrivateRedis("full-backlog");
    RedisClient redis = f.redis;
    f.createGroupAtStart("g");
    capMemory(redis);
    int total = 25_000;
    append(f.topic, total);
    try (Relay relay = relay(f).build()) {
      Throwable refused = null;
      for (int i = 0; i < 1_000 && refused == null; i++) {
        refused = catchThrowable(relay::relayOnce);
      }
      assertThat(refused).as("the relay's write refused").isNotNull().hasMessageStartingWith("OOM ");
      long inStream = redis.xlen(f.streamKey());
      assertThat(inStream).as("entries Redis took before it was full").isPositive().isLessThan(total);
      assertThat(published(f.topic)).isEqualTo(inStream);

      // Built and run while Redis is full: it creates nothing, and reads and acknowledges the whole backlog.
      try (StreamConsumer consumer = f.consumer("g").batchSize(500).build()) {
        long handled = 0;
        for (int i = 0; i < 1_000; i++) {
          PollResult r = consumer.pollOnce();
          handled += r.handled();
          if (r.isEmpty()) {
            break;
          }
        }
        assertThat(handled).isEqualTo(inStream);
        assertThat(f.pendingTotal("g")).isZero();
        assertThat(redis.xlen(f.streamKey())).as("nothing trimmed by the consumer").isEqualTo(inStream);

        // The relay's next cycle is refused again and frees what the group finished: whole stream nodes, so at
        // most one node's entries stay (100 by Redis's default stream-node-max-entries).
        assertThat(catchThrowable(relay::relayOnce)).hasMessageStartingWith("OOM ");
        assertThat(redis.xlen(f.streamKey())).as("entries left after the trim").isLessThanOrEqualTo(100);

        // Publishing resumes, and every payment is handled once.
        for (int i = 0; i < 1_000 && unpublished(f.topic) > 0; i++) {
          relay.relayOnce();
          consumer.pollOnce();
        }
        assertThat(unpublished(f.topic)).isZero();
        for (int i = 0; i < 1_000 && !consumer.pollOnce().isEmpty(); i++) {
          // drains what the last cycles published
        }
      }
      assertThat(f.effectCount("g")).isEqualTo(total);
      assertThat(f.doubleEffects("g")).isZero();
      assertThat(f.pendingTotal("g")).isZero();
    }
  }

  @Test
  void aConsumerStartedWhileRedisIsFullCreatesNothingAndReadsAndAcknowledges() throws Exception {
    Fixture f = onPrivateRedis("full-start");
    RedisClient redis = f.redis;
    f.createGroupAtStart("g");
    f.publishMany(50);
    // Far below what the server uses: every command that may need memory is refused from here on.
    redis.configSet("maxmemory-policy", "noeviction");
    redis.configSet("maxmemory", "1mb");
    assertThat(catchThrowable(() -> redis.xgroupCreate(f.streamKey(), "g", null, false)))
        .as("XGROUP CREATE of the existing group").hasMessageStartingWith("OOM ");
    try (StreamConsumer consumer = f.consumer("g").build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(50);
      assertThat(consumer.pollOnce().isEmpty()).isTrue();
    }
    assertThat(f.effectCount("g")).isEqualTo(50);
    assertThat(f.pendingTotal("g")).isZero();
  }

  @Test
  void aFullRedisWithItsConsumersDownDrainsByItselfOnceTheyStartAndHealthSaysWhatItIs() throws Exception {
    Fixture f = onPrivateRedis("full-drains");
    RedisClient redis = f.redis;
    f.createGroupAtStart("ledger");
    capMemory(redis);
    int total = 40_000;
    try (LogCapture log = LogCapture.startWithInfo();
        Relay relay = relay(f).idlePollInterval(Duration.ofMillis(50)).build()) {
      relay.start();
      append(f.topic, total);
      ConsumerTestKit.await("the relay reports redis-full", DRAIN_BOUND, () -> relay.health().has("redis-full"));
      Health full = relay.health();
      assertThat(full.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(full.reasons()).extracting(Health.Reason::code).containsExactly("redis-full");
      assertThat(full.reasons().get(0).message()).contains("used_memory ", "of maxmemory ",
          "entries that some group has not finished", "cycle(s) in a row refused since");
      assertThat(unpublished(f.topic)).as("rows waiting while Redis is full").isPositive();

      // Two consumers start; nobody trims by hand.
      try (StreamConsumer c1 = f.consumer("ledger").consumerName("c1").batchSize(200).build();
          StreamConsumer c2 = f.consumer("ledger").consumerName("c2").batchSize(200).build()) {
        long started = System.nanoTime();
        c1.start();
        c2.start();
        ConsumerTestKit.await("every payment charged", DRAIN_BOUND,
            () -> unpublished(f.topic) == 0 && f.effectCount("ledger") == total);
        System.out.println("streams: " + total + " payments charged " + Duration.ofNanos(System.nanoTime() - started)
            .toMillis() + " ms after two consumers started on a full Redis");
        ConsumerTestKit.await("relay health UP", DRAIN_BOUND, () -> relay.health().status() == Health.Status.UP);
        ConsumerTestKit.awaitDrained(c1, DRAIN_BOUND);
        ConsumerTestKit.awaitDrained(c2, DRAIN_BOUND);
      }
      assertThat(f.effectCount("ledger")).isEqualTo(total);
      assertThat(f.doubleEffects("ledger")).isZero();
      assertThat(f.pendingTotal("ledger")).isZero();
      assertThat(redis.xinfoStream(f.streamKey()).getStreamInfo().get("entries-added"))
          .as("entries ever added: one per outbox row").isEqualTo((long) total);
      // One WARN per episode of a full Redis (not one per refused cycle), each ended by one INFO line.
      List<String> warned = log.lines().stream().filter(w -> w.contains("Redis is full")).toList();
      List<String> resumed = log.lines().stream().filter(w -> w.contains("Redis accepts entries again")).toList();
      assertThat(warned).isNotEmpty().allMatch(w -> w.startsWith("WARN "));
      assertThat(resumed).hasSameSizeAs(warned).allMatch(w -> w.startsWith("INFO "));
      assertThat(log.warnings()).noneMatch(w -> w.contains("cycle failed"));
    }
  }

  @Test
  void withACapacityPolicyAFullRedisBecomesABoundedWaitThenOutboxFullExceptionAndNothingAcceptedIsLost()
      throws Exception {
    Fixture f = onPrivateRedis("full-capacity");
    RedisClient redis = f.redis;
    f.createGroupAtStart("g");
    capMemory(redis);
    Duration deadline = Duration.ofMillis(500);
    List<String> accepted = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    List<Long> waitedMillis = new ArrayList<>();
    long capacity;
    try (Relay relay = relay(f).idlePollInterval(Duration.ofMillis(50)).build()) {
      relay.start();
      // First Redis fills (the default bound is far away), so that what follows is the full Redis's doing alone.
      Outbox standard = Outbox.builder().schema(env.schema()).build();
      for (int batch = 0; batch < 200 && !relay.health().has("redis-full"); batch++) {
        accepted.addAll(appendBatch(standard, f.topic, "fill-" + batch));
        if (batch % 10 == 9) {
          ConsumerTestKit.await("the relay to catch up", DRAIN_BOUND,
              () -> unpublished(f.topic) < 2_000 || relay.health().has("redis-full"));
        }
      }
      ConsumerTestKit.await("the relay reports redis-full", DRAIN_BOUND, () -> relay.health().has("redis-full"));
      // Then producers with a bound 2,000 rows above what waits now: four batches of 500 go in, the fifth waits.
      capacity = unpublished(f.topic) + 2_000;
      Outbox bounded = Outbox.builder().schema(env.schema())
          .topic(TopicConfig.of(f.topic).withCapacity(CapacityPolicy.waitUpTo(capacity, deadline))).build();
      for (int batch = 0; batch < 20 && refused.size() < 3 * 500; batch++) {
        long start = System.nanoTime();
        try {
          accepted.addAll(appendBatch(bounded, f.topic, "pay-" + batch));
        } catch (OutboxFullException e) {
          assertThat(e.topic()).isEqualTo(f.topic);
          refused.addAll(keys("pay-" + batch));
          waitedMillis.add(Duration.ofNanos(System.nanoTime() - start).toMillis());
        }
      }
      assertThat(refused).as("payments refused").hasSize(3 * 500);
      assertThat(accepted.stream().filter(k -> k.startsWith("pay-"))).as("accepted under the bound").hasSize(2_000);
      assertThat(relay.health().has("redis-full")).as("the relay is held by a full Redis").isTrue();
      System.out.println("capacity " + capacity + ", deadline " + deadline + ": accepted " + accepted.size()
          + ", refused appends waited " + waitedMillis + " ms");
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND message_key = ANY (?)", f.topic,
          (Object) refused.toArray(String[]::new))).as("refused payments in the outbox").isZero();

      try (StreamConsumer consumer = f.consumer("g").batchSize(500).build()) {
        consumer.start();
        ConsumerTestKit.await("every accepted payment handled", DRAIN_BOUND,
            () -> unpublished(f.topic) == 0 && f.effectCount("g") == accepted.size());
        ConsumerTestKit.awaitDrained(consumer, DRAIN_BOUND);
      }
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", f.topic)).isEqualTo(accepted.size());
    assertThat(f.effectCount("g")).isEqualTo(accepted.size());
    assertThat(f.doubleEffects("g")).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND message_key = ANY (?)", f.topic,
        (Object) refused.toArray(String[]::new))).isZero();
  }

  @Test
  void onListsAConsumerTakesHandlesAndAcknowledgesWhileRedisIsOverItsLimit() throws Exception {
    Fixture f = onPrivateRedis("full-list-take");
    RedisClient redis = f.redis;
    TransportSide.append(env, f.topic, 50, i -> PAYLOAD);
    try (Relay relay = relay(f).listTransport(1_000).build()) {
      TransportSide.publishAll(env, relay);
    }
    String list = ListFormat.listKey(env.keyPrefix(), f.topic, 0);
    // Far below what the server uses: every command that may need memory is refused from here on.
    redis.configSet("maxmemory-policy", "noeviction");
    redis.configSet("maxmemory", "1mb");
    assertThat(catchThrowable(() -> redis.lmove(list, list + ":probe", ListDirection.LEFT, ListDirection.RIGHT)))
        .as("LMOVE sent on its own").hasMessageStartingWith("OOM ");
    try (ListConsumer consumer = TransportSide.listConsumer(env, f, "g").consumerName("c").handler(f.effect("g", null))
        .build()) {
      long handled = 0;
      for (int i = 0; i < 100 && handled < 50; i++) {
        handled += consumer.pollOnce().handled();
      }
      assertThat(handled).isEqualTo(50);
    }
    assertThat(redis.llen(list)).isZero();
    assertThat(redis.llen(ListFormat.processingKey(list, "c-0"))).isZero();
    assertThat(f.effectCount("g")).isEqualTo(50);
  }

  @Test
  void onListsAFullRedisWithItsConsumersDownDrainsByItselfOnceTheyStart() throws Exception {
    Fixture f = onPrivateRedis("full-lists");
    RedisClient redis = f.redis;
    capMemory(redis);
    int total = 40_000;
    try (Relay relay = relay(f).listTransport(1_000_000).idlePollInterval(Duration.ofMillis(50)).build()) {
      relay.start();
      append(f.topic, total);
      ConsumerTestKit.await("the relay reports redis-full", DRAIN_BOUND, () -> relay.health().has("redis-full"));
      assertThat(relay.health().reasons().get(0).message()).contains("used_memory ", "its lists hold");
      assertThat(unpublished(f.topic)).as("rows waiting while Redis is full").isPositive();
      // Consumers that start now take (BLMOVE is refused when full; the take script runs), handle, acknowledge.
      try (ListConsumer c1 = TransportSide.listConsumer(env, f, "g").consumerName("c1").batchSize(200)
              .handler(f.effect("g", null)).build();
          ListConsumer c2 = TransportSide.listConsumer(env, f, "g").consumerName("c2").batchSize(200)
              .handler(f.effect("g", null)).build()) {
        long started = System.nanoTime();
        c1.start();
        c2.start();
        ConsumerTestKit.await("every payment charged", DRAIN_BOUND,
            () -> unpublished(f.topic) == 0 && f.effectCount("g") == total);
        System.out.println("lists: " + total + " payments charged " + Duration.ofNanos(System.nanoTime() - started)
            .toMillis() + " ms after two consumers started on a full Redis");
        ConsumerTestKit.await("relay health UP", DRAIN_BOUND, () -> relay.health().status() == Health.Status.UP);
        ConsumerTestKit.await("lists drained", DRAIN_BOUND, () -> c1.status().drained() && c2.status().drained());
      }
    }
    assertThat(f.effectCount("g")).isEqualTo(total);
    assertThat(f.doubleEffects("g")).isZero();
    assertThat(redis.llen(ListFormat.listKey(env.keyPrefix(), f.topic, 0))).isZero();
  }

  /** A fixture on a Redis server of this test's own, which it may fill. */
  private Fixture onPrivateRedis(String topic) {
    RestartableRedis server = env.privateRedis();
    return new Fixture(env, topic, env.newRedisClient(server.uri()), server.uri());
  }

  private RelayBuilder relay(Fixture f) {
    return Relay.builder(env.dataSource(), RedisConnectionSpec.of(f.redisUri)).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(f.topic));
  }

  /** Appends 500 payments keyed {@code prefix-0..499} in one transaction; returns their keys. */
  private List<String> appendBatch(Outbox outbox, String topic, String prefix) throws Exception {
    List<String> keys = keys(prefix);
    List<Message> messages = new ArrayList<>();
    for (String key : keys) {
      messages.add(Message.builder(topic, "payment.created").key(key).payload(PAYLOAD).build());
    }
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      try {
        outbox.appendAll(tx, messages);
        tx.commit();
      } catch (OutboxFullException e) {
        tx.rollback();
        throw e;
      }
    }
    return keys;
  }

  private static List<String> keys(String prefix) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      keys.add(prefix + "-" + i);
    }
    return keys;
  }

  /** Caps the server at what it uses now plus {@link #HEADROOM_BYTES}, refusing writes past it. */
  private static void capMemory(RedisClient redis) {
    long used = 0;
    for (String line : redis.info("memory").split("\r?\n")) {
      if (line.startsWith("used_memory:")) {
        used = Long.parseLong(line.substring("used_memory:".length()).trim());
      }
    }
    redis.configSet("maxmemory-policy", "noeviction");
    redis.configSet("maxmemory", Long.toString(used + HEADROOM_BYTES));
  }

  private void append(String topic, int n) throws Exception {
    for (int done = 0; done < n; done += 1_000) {
      TransportSide.append(env, topic, Math.min(1_000, n - done), i -> PAYLOAD);
    }
  }

  private long published(String topic) {
    return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND topic = ?", topic);
  }

  private long unpublished(String topic) {
    return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL AND topic = ?", topic);
  }
}
