package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.internal.ListQueues;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.ListFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.KillSwitch;
import dev.handoff.testkit.SimulatedCrash;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.args.ListDirection;

/**
 * The list transport end to end: the relay pushes outbox rows onto a Redis list, {@link ListConsumer}s take them
 * with BLMOVE into processing lists, and crashes at each point leave exactly one effect per message.
 */
@HandoffTest
class ListConsumerTest {

  static {
    // The crash tests kill consumer threads on purpose.
    org.awaitility.Awaitility.doNotCatchUncaughtExceptionsByDefault();
  }

  /**
   * Long enough that no stall of a loaded machine lets a live consumer's heartbeat expire (its elements would be
   * handed back while in work, and the exact counts would change); a test of a dead consumer deletes its heartbeat.
   */
  private static final Duration TTL = Duration.ofSeconds(20);

  private final TestEnvironment env;

  ListConsumerTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void fifoOrderOfOneProducersMessagesThroughRelayAndListConsumer() throws Exception {
    Fixture f = new Fixture(env, "fifo");
    List<UUID> seen = new CopyOnWriteArrayList<>();
    MessageHandler effect = f.effect("g", null);
    try (Relay relay = relay("fifo", 10_000).build();
        ListConsumer consumer = consumer(f).batchSize(50).handler((tx, m) -> {
          seen.add(m.messageId());
          effect.handle(tx, m);
        }).build()) {
      relay.start();
      consumer.start();
      List<UUID> appended = new ArrayList<>();
      for (int t = 0; t < 10; t++) {
        appended.addAll(append("fifo", 100, i -> "m"));
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> f.effectCount("g") == 1000);
      assertThat(seen).containsExactlyElementsOf(appended);
      await().atMost(Duration.ofSeconds(5)).until(() -> consumer.status().drained());
    }
    assertThat(f.doubleEffects("g")).isZero();
  }

  @Test
  void consumerKilledAfterBlmoveBeforeCommitIsReapedAndAnotherConsumerAppliesItOnce() throws Exception {
    Fixture f = new Fixture(env, "killed-before-commit");
    List<UUID> ids = append(f.topic, 3, i -> "m");
    try (Relay relay = relay(f.topic, 100).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(3);
    }
    String list = list(f.topic);
    KillSwitch process = ConsumerTestKit.killSwitch(point -> {
      if (point == ConsumerFaults.Point.BEFORE_COMMIT) {
        throw new SimulatedCrash("after BLMOVE, before commit");
      }
    });
    ListConsumer crashed = consumer(f).consumerName("a").faults(process).build();
    assertThatThrownBy(crashed::pollOnce).isInstanceOf(SimulatedCrash.class);
    process.kill();
    String processingA = ListFormat.processingKey(list, "a-0");
    assertThat(env.redis().llen(list)).isZero();
    assertThat(env.redis().llen(processingA)).isEqualTo(3);
    assertThat(f.effectCount("g")).isZero();
    // The dead process's heartbeat runs out: deleted here rather than waited out, so that the long TTL below keeps
    // the live consumer alive and the dead one registered however slowly this test runs.
    assertThat(env.redis().del(ListFormat.heartbeatKey(processingA))).isEqualTo(1);

    List<Long> deliveries = new CopyOnWriteArrayList<>();
    MessageHandler effect = f.effect("g", null);
    PollResult total = PollResult.EMPTY;
    try (ListConsumer other = consumer(f).consumerName("b").heartbeatTtl(Duration.ofSeconds(60))
        .heartbeatInterval(Duration.ofSeconds(10)).handler((tx, m) -> {
      deliveries.add(m.delivery().count());
      effect.handle(tx, m);
    }).build()) {
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (f.effectCount("g") < 3 && System.nanoTime() < deadline) {
        total = total.plus(other.pollOnce());
      }
      assertThat(total.handled()).isEqualTo(3);
      assertThat(total.duplicates()).isZero();
      ListStatus status = other.status();
      assertThat(status.waiting()).isZero();
      assertThat(status.inProcessing()).isZero();
      // The dead consumer stays registered, empty and not alive, until it has been silent for 10 x the TTL.
      assertThat(status.shards().get(0).processing()).containsEntry("a-0", 0L);
      assertThat(status.shards().get(0).alive()).containsEntry("a-0", false).containsEntry("b-0", true);
    }
    for (UUID id : ids) {
      assertThat(f.effectCount("g", id)).isEqualTo(1);
    }
    assertThat(deliveries).containsExactly(2L, 2L, 2L); // the dead consumer's attempt counted once each
    assertThat(env.redis().exists(ListFormat.deliveriesKey(list))).isFalse();
    crashed.close(); // frees the frozen consumer's thread and connections
  }

  @Test
  void aKilledRunningConsumerTakesNothingMoreRenewsNoHeartbeatAndGivesNothingBackSoAPeerReapsItsElements()
      throws Exception {
    Fixture f = new Fixture(env, "killed-running");
    List<UUID> ids = new ArrayList<>(append(f.topic, 3, i -> "m"));
    String list = list(f.topic);
    String processing0 = ListFormat.processingKey(list, "a-0");
    String processing1 = ListFormat.processingKey(list, "a-1");
    // The process dies right after its first commit, before its LREM: the hook kills it from the worker's thread.
    AtomicReference<KillSwitch> process = new AtomicReference<>();
    AtomicBoolean killing = new AtomicBoolean();
    process.set(ConsumerTestKit.killSwitch(point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT && killing.compareAndSet(false, true)) {
        process.get().kill();
      }
    }));
    try (Relay relay = relay(f.topic, 100).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(3);
      ListConsumer killed = consumer(f).consumerName("a").workers(2).faults(process.get()).build();
      killed.start();
      // Both workers and the housekeeping thread (heartbeats, reaper, worker check) stop at their next point.
      ConsumerTestKit.await("the killed consumer's three threads frozen", Duration.ofSeconds(10),
          () -> process.get().frozenThreads() == 3);
      ids.addAll(append(f.topic, 2, i -> "n"));
      assertThat(relay.relayOnce().published()).isEqualTo(2);
      assertThat(f.effectCount("g")).isEqualTo(3);
      assertThat(env.redis().llen(processing0) + env.redis().llen(processing1)).isEqualTo(3);

      // close ends the frozen threads (abandoned: not clean) and gives nothing back
      assertThat(killed.close(Duration.ofMillis(100))).isFalse();
      ConsumerTestKit.await("the frozen threads ended by close", Duration.ofSeconds(10),
          () -> process.get().frozenThreads() == 0);
      assertThat(env.redis().llen(list)).isEqualTo(2);
      assertThat(env.redis().llen(processing0) + env.redis().llen(processing1)).isEqualTo(3);
      assertThat(env.redis().hlen(ListFormat.consumersKey(list))).isEqualTo(2);

      // Its heartbeats, renewed by no one since the freeze, run out: deleted here rather than waited out.
      assertThat(env.redis().del(ListFormat.heartbeatKey(processing0), ListFormat.heartbeatKey(processing1)))
          .isEqualTo(2);
      PollResult total = PollResult.EMPTY;
      try (ListConsumer other = consumer(f).consumerName("b").build()) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (total.handled() + total.duplicates() < 5 && System.nanoTime() < deadline) {
          total = total.plus(other.pollOnce());
        }
      }
      assertThat(total.duplicates()).as("the killed consumer's committed batch").isEqualTo(3);
      assertThat(total.handled()).as("what it did not take after the kill").isEqualTo(2);
    }
    assertThat(env.redis().llen(list)).isZero();
    assertThat(env.redis().llen(processing0) + env.redis().llen(processing1)).isZero();
    for (UUID id : ids) {
      assertThat(f.effectCount("g", id)).isEqualTo(1);
    }
  }

  @Test
  void aWorkerThreadThatDiesInsideALiveConsumerIsReplacedAndItsElementsAreHandledOnce() throws Exception {
    Fixture f = new Fixture(env, "worker-died");
    List<UUID> ids = append(f.topic, 3, i -> "m");
    try (Relay relay = relay(f.topic, 100).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(3);
    }
    String list = list(f.topic);
    java.util.concurrent.atomic.AtomicBoolean died = new java.util.concurrent.atomic.AtomicBoolean();
    // A group of its own: the other tests count the markers of group "g".
    try (LogCapture logs = LogCapture.start();
        ListConsumer live = consumer(f).group("died").heartbeatInterval(Duration.ofMillis(150))
            .handler(f.effect("died", null)).consumerName("a").workers(1).faults(point -> {
              if (point == ConsumerFaults.Point.BEFORE_COMMIT && died.compareAndSet(false, true)) {
                throw new SimulatedCrash("worker thread dies inside a live process");
              }
            }).build()) {
      live.start();
      // The consumer's worker check gives the worker a new thread, which reads its processing list again.
      await().atMost(Duration.ofSeconds(15)).until(() -> f.effectCount("died") == 3
          && env.redis().llen(ListFormat.processingKey(list, "a-0")) == 0);
      assertThat(died).isTrue();
      assertThat(logs.warnings()).filteredOn(l -> l.startsWith("ERROR") && l.contains("died; starting a new thread"))
          .hasSize(1);
    }
    for (UUID id : ids) {
      assertThat(f.effectCount("died", id)).isEqualTo(1);
    }
  }

  @Test
  void consumerKilledAfterCommitBeforeLremIsReturnedRecognisedAsDuplicateAndRemoved() throws Exception {
    Fixture f = new Fixture(env, "killed-after-commit");
    List<UUID> ids = append(f.topic, 3, i -> "m");
    try (Relay relay = relay(f.topic, 100).build()) {
      relay.relayOnce();
    }
    String list = list(f.topic);
    KillSwitch process = ConsumerTestKit.killSwitch(point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT) {
        throw new SimulatedCrash("after commit, before LREM");
      }
    });
    ListConsumer crashed = consumer(f).consumerName("a").faults(process).build();
    assertThatThrownBy(crashed::pollOnce).isInstanceOf(SimulatedCrash.class);
    process.kill();
    assertThat(f.effectCount("g")).isEqualTo(3);
    assertThat(env.redis().llen(ListFormat.processingKey(list, "a-0"))).isEqualTo(3);
    // The dead process's heartbeat runs out: deleted here rather than waited out.
    assertThat(env.redis().del(ListFormat.heartbeatKey(ListFormat.processingKey(list, "a-0")))).isEqualTo(1);

    PollResult total = PollResult.EMPTY;
    try (ListConsumer other = consumer(f).consumerName("b").build()) {
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (total.duplicates() < 3 && System.nanoTime() < deadline) {
        total = total.plus(other.pollOnce());
      }
      assertThat(total.duplicates()).isEqualTo(3);
      assertThat(total.handled()).isZero();
      assertThat(other.status().duplicatesSkipped()).isEqualTo(3);
    }
    assertThat(env.redis().llen(list)).isZero();
    assertThat(env.redis().llen(ListFormat.processingKey(list, "a-0"))).isZero();
    assertThat(env.redis().llen(ListFormat.processingKey(list, "b-0"))).isZero();
    for (UUID id : ids) {
      assertThat(f.effectCount("g", id)).isEqualTo(1);
    }
    crashed.close(); // frees the frozen consumer's thread and connections
  }

  @Test
  void atCapacityTheRelayStopsTheListNeverExceedsTheBoundAndEverythingArrives() throws Exception {
    Fixture f = new Fixture(env, "capacity");
    String list = list(f.topic);
    List<UUID> ids = append(f.topic, 300, i -> "m");
    int capacity = 20;
    try (Relay relay = relay(f.topic, capacity).build();
        ListConsumer consumer = consumer(f).batchSize(5).build()) {
      // Deterministic part: the relay fills the list to the bound and stops; the outbox holds the rest.
      assertThat(relay.relayOnce().published()).isEqualTo(capacity);
      assertThat(relay.relayOnce().published()).isZero();
      ListStatus full = consumer.status();
      assertThat(full.waiting()).isEqualTo(capacity);
      assertThat(full.outboxBacklog()).isEqualTo(300 - capacity);
      assertThat(full.shards().get(0).capacity()).isEqualTo(capacity);
      assertThat(full.shards().get(0).lastPushedId()).isNotNull();

      // Running part: the bound (list + processing lists) holds at every sample while everything flows.
      AtomicBoolean done = new AtomicBoolean();
      AtomicLong maxWaiting = new AtomicLong();
      AtomicLong maxInSystem = new AtomicLong();
      String processing = ListFormat.processingKey(list, consumer.config().workerName(0));
      CountDownLatch firstSample = new CountDownLatch(1);
      Thread sampler = new Thread(() -> {
        while (!done.get()) {
          List<?> r = (List<?>) env.redis().eval("return {redis.call('LLEN', KEYS[1]),"
              + " redis.call('LLEN', KEYS[1]) + redis.call('LLEN', KEYS[2])}", List.of(list, processing), List.of());
          maxWaiting.accumulateAndGet((Long) r.get(0), Math::max);
          maxInSystem.accumulateAndGet((Long) r.get(1), Math::max);
          firstSample.countDown();
          Thread.onSpinWait();
        }
      });
      sampler.start();
      // The first sample sees the full list before anything runs: the maximum is then the bound whatever the
      // relay and the consumer do afterwards.
      assertThat(firstSample.await(10, TimeUnit.SECONDS)).isTrue();
      relay.start();
      consumer.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> f.effectCount("g") == 300);
      done.set(true);
      sampler.join(Duration.ofSeconds(30).toMillis());
      assertThat(sampler.isAlive()).as("the sampler stopped").isFalse();
      assertThat(maxWaiting.get()).isEqualTo(capacity);
      assertThat(maxInSystem.get()).isLessThanOrEqualTo(capacity);
      await().atMost(Duration.ofSeconds(5)).until(() -> consumer.status().drained());
    }
    assertThat(f.doubleEffects("g")).isZero();
    for (UUID id : List.of(ids.get(0), ids.get(150), ids.get(299))) {
      assertThat(f.effectCount("g", id)).isEqualTo(1);
    }
  }

  @Test
  void poisonMessageIsDeadLetteredAfterMaxDeliveriesWhileTheOthersFlow() throws Exception {
    Fixture f = new Fixture(env, "poison");
    List<UUID> ids = append(f.topic, 200, i -> i == 10 ? "poison" : "m" + i);
    UUID poison = ids.get(10);
    AtomicLong attempts = new AtomicLong();
    // A group of its own: inbox markers are counted per group, and the other tests use "g".
    MessageHandler effect = f.effect("poison", null);
    try (Relay relay = relay(f.topic, 10_000).build();
        ListConsumer consumer = consumer(f).group("poison").batchSize(20).maxDeliveries(3).handler((tx, m) -> {
          if (m.payloadAsString().equals("poison")) {
            attempts.incrementAndGet();
            throw new IllegalStateException("cannot charge " + m.messageId());
          }
          effect.handle(tx, m);
        }).build()) {
      relay.start();
      consumer.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> f.effectCount("poison") == 199
          && consumer.status().deadLetters() == 1);
      List<DeadLetter> dead = consumer.deadLetters(10);
      assertThat(dead).hasSize(1);
      assertThat(dead.get(0).messageId()).isEqualTo(poison);
      assertThat(dead.get(0).delivery().count()).isEqualTo(3);
      assertThat(dead.get(0).error()).contains("cannot charge " + poison);
      assertThat(dead.get(0).delivery().streamKey()).isEqualTo(list(f.topic));
      await().atMost(Duration.ofSeconds(5)).until(() -> consumer.status().drained());
    }
    assertThat(attempts).hasValue(3);
    assertThat(f.effectCount("poison", poison)).isZero();
    assertThat(f.doubleEffects("poison")).isZero();
    assertThat(f.inboxCount("poison", "dead")).isEqualTo(1);
    assertThat(f.inboxCount("poison", "processed")).isEqualTo(199);
    assertThat(env.redis().exists(ListFormat.deliveriesKey(list(f.topic)))).isFalse();
  }

  @Test
  void lremOfAMessageThatAppearsTwiceRemovesOneElementPerAcknowledgement() throws Exception {
    Fixture f = new Fixture(env, "twice");
    String list = list(f.topic);
    UUID id = append(f.topic, 1, i -> "m").get(0);
    try (Relay relay = relay(f.topic, 100).build()) {
      relay.relayOnce();
    }
    byte[] element = env.redis().lindex(list.getBytes(StandardCharsets.UTF_8), 0);
    env.redis().rpush(list.getBytes(StandardCharsets.UTF_8), element); // a duplicate push: the same element twice
    assertThat(env.redis().llen(list)).isEqualTo(2);

    // At the queue level: both copies in one processing list, each acknowledgement removes exactly one.
    String processing = ListFormat.processingKey(list, "manual");
    env.redis().lmove(list, processing, ListDirection.LEFT, ListDirection.RIGHT);
    env.redis().lmove(list, processing, ListDirection.LEFT, ListDirection.RIGHT);
    try (ListQueues queues = new ListQueues(new HostAndPort(env.redisUri().getHost(), env.redisUri().getPort()),
        java.util.Set.of(), redis.clients.jedis.DefaultJedisClientConfig.builder().build(), 1, Duration.ofMillis(100),
        Duration.ofSeconds(1))) {
      assertThat(queues.ack(list, processing, List.of(element), List.of(id.toString()))).isEqualTo(1);
      assertThat(env.redis().llen(processing)).isEqualTo(1);
      // Put the remaining copy back, as the reaper would, and let a consumer take both copies one by one.
      env.redis().lmove(processing, list, ListDirection.RIGHT, ListDirection.LEFT);
      env.redis().rpush(list.getBytes(StandardCharsets.UTF_8), element);
    }
    try (ListConsumer consumer = consumer(f).batchSize(1).build()) {
      PollResult first = consumer.pollOnce();
      assertThat(first.handled()).isEqualTo(1);
      assertThat(env.redis().llen(list)).isEqualTo(1); // the other copy is still waiting
      PollResult second = consumer.pollOnce();
      assertThat(second.duplicates()).isEqualTo(1);
      assertThat(consumer.status().waiting()).isZero();
      assertThat(consumer.status().inProcessing()).isZero();
    }
    assertThat(f.effectCount("g", id)).isEqualTo(1);
  }

  @Test
  void closeReturnsHeldElementsAndUnregisters() throws Exception {
    Fixture f = new Fixture(env, "close");
    String list = list(f.topic);
    append(f.topic, 2, i -> "fails");
    try (Relay relay = relay(f.topic, 100).build()) {
      relay.relayOnce();
    }
    ListConsumer consumer = consumer(f).consumerName("c").backoff(Duration.ofMillis(500), Duration.ofMillis(500))
        .handler((tx, m) -> {
          throw new IllegalStateException("not now");
        }).build();
    assertThat(consumer.pollOnce().failed()).isEqualTo(2);
    assertThat(consumer.status().shards().get(0).processing()).containsEntry("c-0", 2L);
    assertThat(consumer.status().shards().get(0).oldestInProcessingId()).isNotNull();
    consumer.close();
    assertThat(env.redis().llen(list)).isEqualTo(2);
    assertThat(env.redis().hlen(ListFormat.consumersKey(list))).isZero();
    // each failure and the return on close counted: 2 deliveries without outcome each
    assertThat(env.redis().hvals(ListFormat.deliveriesKey(list))).containsExactly("2", "2");
  }

  private ListConsumerBuilder consumer(Fixture f) {
    return ListConsumer.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(f.topic)
        .group("g")
        .handler(f.effect("g", null))
        .block(Duration.ofMillis(100))
        .heartbeatTtl(TTL)
        .heartbeatInterval(Duration.ofSeconds(1))
        .reapInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200));
  }

  private RelayBuilder relay(String topic, int capacity) {
    return Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .listTransport(capacity)
        .idlePollInterval(Duration.ofMillis(20));
  }

  /** Appends {@code n} rows in one transaction; returns their message IDs in append order. */
  private List<UUID> append(String topic, int n, java.util.function.IntFunction<String> payload) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    List<UUID> ids = new ArrayList<>();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        ids.add(outbox.append(tx, Message.builder(topic, "test.event").key("k" + i).payload(payload.apply(i))
            .build()).messageId());
      }
      tx.commit();
    }
    return ids;
  }

  private String list(String topic) {
    return ListFormat.listKey(env.keyPrefix(), topic, 0);
  }
}
