package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.consumer.ordering.WhenExhausted;
import dev.handoff.consumer.status.OrderedShard;
import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ordered processing per shard ({@link Ordering#perShard()}), in one JVM: a failing message holds up only its
 * shard, an exhausted one is dead-lettered in its place or stops its shard until an operator answers, and shards
 * move between consumers as they join and leave with one owner at a time. The faults that need a process of their
 * own (SIGSTOP, SIGKILL) are {@code OrderedProcessesTest}'s.
 */
@HandoffTest
class OrderedProcessingTest {

  private static final Logger log = LoggerFactory.getLogger(OrderedProcessingTest.class);
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private final TestEnvironment env;

  OrderedProcessingTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aMessageThatFailsThreeTimesHoldsUpOnlyItsShardAndItsSuccessorsCommitAfterIt() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-retry", 8);
    List<StreamMessage> messages = t.publish(env.redis(), 40, 10);
    StreamMessage poison = messages.stream().filter(m -> m.key().equals("key-7")).skip(4).findFirst().orElseThrow();
    int poisonShard = t.shardOf("key-7");
    AtomicInteger failures = new AtomicInteger();
    AtomicLong otherShardsAtFirstFailure = new AtomicLong(-1);
    AtomicLong otherShardsAtSuccess = new AtomicLong(-1);
    MessageHandler record = OrderedTopic.effect(env.schema(), t.effects, "a", t.shards);
    MessageHandler handler = (tx, m) -> {
      if (m.messageId().equals(poison.messageId())) {
        if (failures.incrementAndGet() <= 3) {
          otherShardsAtFirstFailure.compareAndSet(-1, otherShards(t, poisonShard));
          throw new IllegalStateException("poison, failure " + failures.get());
        }
        otherShardsAtSuccess.set(otherShards(t, poisonShard));
      }
      record.handle(tx, m);
    };
    try (StreamConsumer a = t.consumer("g", "a").workers(2).batchSize(10).handler(handler)
        .backoff(Duration.ofMillis(200), Duration.ofMillis(400)).build()) {
      a.start();
      ConsumerTestKit.await("every message applied", DEADLINE, () -> t.effects() == messages.size());
    }
    assertThat(failures.get()).isEqualTo(4);
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
    // Every later entry of the poison's shard committed after it.
    assertThat(env.queryLong("SELECT count(*) FROM " + t.effects + " e WHERE shard = ? AND split_part(stream_id, '-',"
        + " 2)::bigint > (SELECT split_part(stream_id, '-', 2)::bigint FROM " + t.effects + " WHERE message_id = ?)"
        + " AND id < (SELECT id FROM " + t.effects + " WHERE message_id = ?)", poisonShard, poison.messageId(),
        poison.messageId())).isZero();
    log.info("other shards' effects committed while shard {} waited behind its failing message: {} (of {})",
        poisonShard, otherShardsAtSuccess.get() - otherShardsAtFirstFailure.get(),
        messages.stream().filter(m -> t.shardOf(m.key()) != poisonShard).count());
  }

  @Test
  void anExhaustedMessageIsDeadLetteredInItsPlaceAndItsShardGoesOnShowingItWhileItWaits() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-dlq", 4);
    List<StreamMessage> messages = t.publish(env.redis(), 12, 5);
    StreamMessage poison = messages.get(14);
    int shard = t.shardOf(poison.key());
    MessageHandler record = OrderedTopic.effect(env.schema(), t.effects, "a", t.shards);
    MessageHandler handler = (tx, m) -> {
      if (m.messageId().equals(poison.messageId())) {
        throw new IllegalStateException("poison");
      }
      record.handle(tx, m);
    };
    try (StreamConsumer a = t.consumer("g", "a").workers(2).batchSize(5).handler(handler).maxDeliveries(2)
        .backoff(Duration.ofMillis(1500), Duration.ofMillis(1500)).build()) {
      a.start();
      ConsumerTestKit.await("the poison's shard shown as blocked", DEADLINE, () -> blocked(a, shard) != null);
      OrderedShard.Blocked b = blocked(a, shard);
      assertThat(b.messageId()).isEqualTo(poison.messageId());
      assertThat(b.stoppedAt()).isNull();
      assertThat(b.error()).contains("poison");
      Health h = a.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(h.has("shard-blocked")).isTrue();
      ConsumerTestKit.await("every other message applied", DEADLINE, () -> t.effects() == messages.size() - 1);
      ConsumerTestKit.await("the shard flows again", DEADLINE, () -> blocked(a, shard) == null);
      assertThat(a.health().status()).isEqualTo(Health.Status.UP);
      assertThat(a.deadLetters(10)).singleElement().satisfies(d -> {
        assertThat(d.messageId()).isEqualTo(poison.messageId());
        assertThat(d.delivery().count()).isEqualTo(2);
      });
    }
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'g' AND outcome = 'dead'"))
        .isEqualTo(1);
  }

  @Test
  void anExhaustedMessageStopsItsShardUntilAnOperatorSkipsItWhileTheOtherShardsFlow() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-stop", 4);
    List<StreamMessage> messages = t.publish(env.redis(), 12, 5);
    StreamMessage poison = messages.get(14);
    int shard = t.shardOf(poison.key());
    long after = messages.stream().skip(15).filter(m -> t.shardOf(m.key()) == shard).count();
    long others = messages.stream().filter(m -> t.shardOf(m.key()) != shard).count();
    MessageHandler record = OrderedTopic.effect(env.schema(), t.effects, "a", t.shards);
    MessageHandler handler = (tx, m) -> {
      if (m.messageId().equals(poison.messageId())) {
        throw new IllegalStateException("poison");
      }
      record.handle(tx, m);
    };
    DeadLetterAdmin admin = DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build();
    try (StreamConsumer a = t.consumer("stop", "a").workers(2).batchSize(5).handler(handler).maxDeliveries(2)
        .ordering(Ordering.perShard().leaseTtl(Duration.ofSeconds(2)).whenExhausted(WhenExhausted.STOP_SHARD))
        .build()) {
      a.start();
      ConsumerTestKit.await("the poison's shard stopped", DEADLINE,
          () -> blocked(a, shard) != null && blocked(a, shard).stoppedAt() != null);
      ConsumerTestKit.await("the other shards drained", DEADLINE,
          () -> env.queryLong("SELECT count(*) FROM " + t.effects + " WHERE shard <> ?", shard) == others);
      assertThat(blocked(a, shard).messageId()).isEqualTo(poison.messageId());
      assertThat(blocked(a, shard).deliveries()).isEqualTo(2);
      assertThat(a.health().has("shard-stopped")).isTrue();
      assertThat(a.deadLetters(10)).isEmpty();
      assertThat(env.queryLong("SELECT count(*) FROM " + t.effects + " e WHERE shard = ? AND split_part(stream_id,"
          + " '-', 2)::bigint > ?", shard, streamSeq(env, t, shard, 15, messages))).isZero();

      assertThat(admin.resumeShard("stop", t.topic, shard == 0 ? 1 : 0, true)).isFalse(); // not stopped
      assertThat(admin.resumeShard("stop", t.topic, shard, true)).isTrue();
      ConsumerTestKit.await("the poison dead-lettered and its successors applied", DEADLINE,
          () -> t.effects() == messages.size() - 1 && !a.deadLetters(10).isEmpty());
      ConsumerTestKit.await("the shard flows again", DEADLINE, () -> blocked(a, shard) == null);
      assertThat(a.health().status()).isEqualTo(Health.Status.UP);
      assertThat(a.deadLetters(10)).singleElement().satisfies(d -> {
        assertThat(d.messageId()).isEqualTo(poison.messageId());
        assertThat(d.error()).contains("handoff ordered resume --skip");
      });
    }
    assertThat(after).isPositive();
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
  }

  @Test
  void shardsMoveWhenAConsumerJoinsAndWhenOneLeavesWithOneOwnerAtATime() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-rebalance", 8);
    List<StreamMessage> first = t.publish(env.redis(), 40, 5);
    Set<String> seen = ConcurrentHashMap.newKeySet();
    List<String> violations = new ArrayList<>();
    // Reads the lease table every 20 ms throughout: one row per shard holds its one owner, and a live owner must be
    // one of the consumers that run.
    ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
    Runnable sample = () -> {
      for (String owner : env.queryList("SELECT owner FROM consumer_lease WHERE consumer_group = 'g' AND topic = ?"
          + " AND expires_at > now()", String.class, t.topic)) {
        seen.add(owner);
        if (!owner.equals("a") && !owner.equals("b")) {
          synchronized (violations) {
            violations.add(owner);
          }
        }
      }
    };
    StreamConsumer a = t.consumer("g", "a").workers(2).batchSize(10).build();
    StreamConsumer b = null;
    try {
      sampler.scheduleWithFixedDelay(sample, 0, 20, TimeUnit.MILLISECONDS);
      a.start();
      ConsumerTestKit.await("a holds every shard", DEADLINE, () -> owners(t, "a") == 8);
      ConsumerTestKit.await("the first messages applied", DEADLINE, () -> t.effects() == first.size());
      b = t.consumer("g", "b").workers(2).batchSize(10).build();
      b.start();
      ConsumerTestKit.await("the shards spread over a and b", DEADLINE,
          () -> owners(t, "a") == 4 && owners(t, "b") == 4);
      List<StreamMessage> second = t.publish(env.redis(), 40, 5);
      ConsumerTestKit.await("the second messages applied", DEADLINE,
          () -> t.effects() == first.size() + second.size());
      assertThat(a.close(Duration.ofSeconds(10))).isTrue();
      // A clean close gives the shards back at once: b takes them at its next round, not after the lease TTL.
      ConsumerTestKit.await("b holds every shard", DEADLINE, () -> owners(t, "b") == 8);
      List<StreamMessage> third = t.publish(env.redis(), 40, 5);
      ConsumerTestKit.await("the third messages applied", DEADLINE,
          () -> t.effects() == first.size() + second.size() + third.size());
    } finally {
      sampler.shutdown();
      assertThat(sampler.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
      a.close();
      if (b != null) {
        b.close();
      }
    }
    assertThat(violations).isEmpty();
    assertThat(seen).containsExactlyInAnyOrder("a", "b");
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
    // Each shard changed hands at most twice (a, then b, then perhaps a shard a had kept moving to b): its effects
    // come in at most three runs of one consumer, never interleaved.
    assertThat(t.ownerRuns()).isBetween(8L, 8L * 3);
    assertThat(env.queryLong("SELECT count(*) FROM consumer_member WHERE consumer_group = 'g'")).isZero();
    // An unordered consumer of the ordered group would read beside the owners: refused before it reads.
    try (StreamConsumer unordered = t.consumer("g", "c").ordering(Ordering.NONE).build()) {
      assertThatThrownBy(unordered::start).isInstanceOf(IllegalStateException.class)
          .hasMessageStartingWith("consumer group 'g' of topic 'o-rebalance' is ordered per shard");
    }
  }

  @Test
  void aRequestedRetryOfAnOrderedGroupsDeadLetterRunsThroughItsShardsOwner() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-retry-owner", 4);
    List<StreamMessage> messages = t.publish(env.redis(), 12, 3);
    StreamMessage poison = messages.get(5);
    int shard = t.shardOf(poison.key());
    Set<UUID> cured = ConcurrentHashMap.newKeySet();
    Function<String, MessageHandler> handlerOf = name -> (tx, m) -> {
      if (m.messageId().equals(poison.messageId()) && !cured.contains(m.messageId())) {
        throw new IllegalStateException("poison");
      }
      OrderedTopic.effect(env.schema(), t.effects, name, t.shards).handle(tx, m);
    };
    DeadLetterAdmin admin = DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build();
    try (StreamConsumer a = t.consumer("owners", "a").workers(2).handler(handlerOf.apply("a")).maxDeliveries(1)
            .build();
        StreamConsumer b = t.consumer("owners", "b").workers(2).handler(handlerOf.apply("b")).maxDeliveries(1)
            .build()) {
      a.start();
      ConsumerTestKit.await("the poison dead-lettered, the rest applied", DEADLINE,
          () -> a.deadLetters(10).size() == 1 && t.effects() == messages.size() - 1);
      b.start();
      // Two each: the fair share of both, so no shard moves any more while the retry runs.
      ConsumerTestKit.await("the shards spread over a and b", DEADLINE, () -> env.queryLong("SELECT count(*) FROM"
          + " consumer_lease WHERE consumer_group = 'owners' AND owner = 'a' AND expires_at > now()") == 2
          && env.queryLong("SELECT count(*) FROM consumer_lease WHERE consumer_group = 'owners' AND owner = 'b'"
          + " AND expires_at > now()") == 2);
      cured.add(poison.messageId());
      StreamConsumer notTheOwner = currentOwner(t, shard).equals("a") ? b : a;
      assertThat(admin.requestRetry("owners", DeadLetterSelection.all()).requested()).isEqualTo(1);
      assertThat(notTheOwner.maintainOnce()).as("requests the consumer without the shard ran").isZero();
      ConsumerTestKit.await("the retry ran", DEADLINE,
          () -> a.deadLetters(10).stream().allMatch(d -> d.status().equals("retried")));
      // Run by the consumer that holds the poison's shard (both pick up requests; only the owner takes this one).
      assertThat(env.queryList("SELECT consumer FROM " + t.effects + " WHERE message_id = ?", String.class,
          poison.messageId())).containsExactly(currentOwner(t, shard));
    }
    assertThat(t.doubleEffects()).isZero();
  }

  /** The consumer holding {@code shard}'s lease now, as the lease table says; "none" if no one does. */
  private String currentOwner(OrderedTopic t, int shard) {
    List<String> owners = env.queryList("SELECT owner FROM consumer_lease WHERE consumer_group = 'owners' AND topic = ?"
        + " AND shard = ? AND expires_at > now()", String.class, t.topic, shard);
    return owners.isEmpty() ? "none" : owners.get(0);
  }

  /** consumer/README.md's example of an ordered group, line for line (DocExamplesTest checks it). */
  @Test
  void theReadmeExampleAppliesEachKeysPaymentsInOrder() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "payments", 4);
    DataSource dataSource = env.dataSource();
    RedisConnectionSpec redis = env.redisSpec();
    MessageHandler charge = OrderedTopic.effect(env.schema(), t.effects, "doc", t.shards);
    StreamConsumer consumer = StreamConsumer.builder(dataSource, redis)
        .schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("payments").withShards(4))
        .group("ledger")
        .ordering(Ordering.perShard())
        .handler(charge)
        .build();
    consumer.start();
    try {
      List<StreamMessage> messages = t.publish(env.redis(), 30, 10);
      ConsumerTestKit.await("every payment charged", DEADLINE, () -> t.effects() == messages.size());
    } finally {
      consumer.close();
    }
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
  }

  private long owners(OrderedTopic t, String owner) {
    return env.queryLong("SELECT count(*) FROM consumer_lease WHERE consumer_group = 'g' AND topic = ? AND owner = ?"
        + " AND expires_at > now()", t.topic, owner);
  }

  private static OrderedShard.Blocked blocked(StreamConsumer c, int shard) {
    return c.status().orderedShards().stream().filter(s -> s.shard() == shard).findFirst()
        .map(OrderedShard::blocked).orElse(null);
  }

  private long otherShards(OrderedTopic t, int shard) {
    return env.queryLong("SELECT count(*) FROM " + t.effects + " WHERE shard <> ?", shard);
  }

  /** The stream sequence of message {@code index} when it is on {@code shard} (its entries are numbered 1, 2, ...). */
  private static long streamSeq(TestEnvironment env, OrderedTopic t, int shard, int index, List<StreamMessage> all) {
    long n = 0;
    for (int i = 0; i < index; i++) {
      if (t.shardOf(all.get(i).key()) == shard) {
        n++;
      }
    }
    return n; // the entries before it on its shard: the poison is entry n + 1
  }
}
