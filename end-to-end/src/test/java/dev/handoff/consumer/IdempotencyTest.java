package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.resps.StreamPendingEntry;

@HandoffTest
class IdempotencyTest {

  private final TestEnvironment env;

  IdempotencyTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void sameMessageDeliveredTwiceHasOneEffectAndTheSecondIsAcknowledgedAsDuplicate() {
    Fixture f = new Fixture(env, "dup");
    StreamMessage m = f.message();
    f.publish(m);
    try (StreamConsumer consumer = f.consumer("ledger").build()) {
      PollResult first = consumer.pollOnce();
      assertThat(first.handled()).isEqualTo(1);

      // the relay re-publishes it (a new entry with the same message ID) ...
      f.publish(m);
      PollResult second = consumer.pollOnce();
      assertThat(second.read()).isEqualTo(1);
      assertThat(second.handled()).isZero();
      assertThat(second.duplicates()).isEqualTo(1);

      // ... and an operator replays everything the stream retains
      PollResult replay = ConsumerTestKit.assertReplayChangesNothing(consumer);
      assertThat(replay.read()).isEqualTo(2);
      assertThat(replay.duplicates()).isEqualTo(2);

      assertThat(f.effectCount("ledger", m.messageId())).isEqualTo(1);
      assertThat(f.inboxCount("ledger")).isEqualTo(1);
      assertThat(f.pendingTotal("ledger")).isZero();
      assertThat(consumer.status().duplicatesSkipped()).isEqualTo(3);
    }
  }

  @Test
  void twoCopiesInOneBatchRunTheHandlerOnce() {
    Fixture f = new Fixture(env, "dup-batch");
    StreamMessage m = f.message();
    f.publish(m);
    f.publish(m);
    try (StreamConsumer consumer = f.consumer("ledger-batch").build()) {
      PollResult r = consumer.pollOnce();
      assertThat(r.read()).isEqualTo(2);
      assertThat(r.handled()).isEqualTo(1);
      assertThat(r.duplicates()).isEqualTo(1);
      assertThat(f.effectCount("ledger-batch", m.messageId())).isEqualTo(1);
      assertThat(f.pendingTotal("ledger-batch")).isZero();
    }
  }

  @ParameterizedTest
  @EnumSource(FailureIsolation.class)
  void failingHandlerRollsBackItsMarkerStaysPendingAndIsRetriedAfterBackoff(FailureIsolation isolation) {
    Fixture f = new Fixture(env, "fail-" + isolation.name().toLowerCase().replace('_', '-'));
    String g = f.topic;
    StreamMessage bad = f.message();
    List<StreamMessage> good = List.of(f.message(), f.message());
    f.publish(good.get(0));
    String badId = f.publish(bad);
    f.publish(good.get(1));
    AtomicInteger badAttempts = new AtomicInteger();
    List<Long> badDeliveries = new CopyOnWriteArrayList<>();
    List<Long> attemptTimes = new CopyOnWriteArrayList<>();
    MessageHandler effect = f.effect(g, null);
    try (StreamConsumer consumer = f.consumer(g)
        .failureIsolation(isolation)
        .minIdle(Duration.ofSeconds(2))
        .backoff(Duration.ofMillis(400), Duration.ofMillis(800))
        .handler((tx, m) -> {
          if (m.messageId().equals(bad.messageId())) {
            badDeliveries.add(m.delivery().count());
            attemptTimes.add(System.nanoTime());
            if (badAttempts.incrementAndGet() == 1) {
              effect.handle(tx, m); // written, then rolled back with the marker
              throw new IllegalStateException("downstream not ready");
            }
          }
          effect.handle(tx, m);
        })
        .build()) {
      PollResult first = consumer.pollOnce();
      assertThat(first.handled()).isEqualTo(2);
      assertThat(first.failed()).isEqualTo(1);
      assertThat(f.effectCount(g, bad.messageId())).isZero();
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = '" + g + "' AND message_id = ?",
          bad.messageId())).isZero();
      List<StreamPendingEntry> pending = f.pending(g);
      assertThat(pending).hasSize(1);
      assertThat(pending.get(0).getID().toString()).isEqualTo(badId);
      assertThat(pending.get(0).getConsumerName()).isEqualTo(consumer.config().workerName(0));
      // backing off, not spinning: the entry's idle time was pushed back to minIdle - backoff. (Whether the next
      // poll finds it depends on how soon that poll runs, so the idle time, which only grows, is what is checked.)
      assertThat(pending.get(0).getIdleTime()).isGreaterThanOrEqualTo(2000 - 800);

      await().atMost(Duration.ofSeconds(5)).until(() -> consumer.pollOnce().handled() == 1);
      assertThat(badAttempts).hasValue(2);
      assertThat(badDeliveries).containsExactly(1L, 2L);
      assertThat(Duration.ofNanos(attemptTimes.get(1) - attemptTimes.get(0))).isGreaterThan(Duration.ofMillis(200));
      assertThat(f.effectCount(g, bad.messageId())).isEqualTo(1);
      assertThat(f.effectCount(g)).isEqualTo(3);
      assertThat(f.doubleEffects(g)).isZero();
      assertThat(f.inboxCount(g, "processed")).isEqualTo(3);
      assertThat(f.pendingTotal(g)).isZero();
    }
  }

  @Test
  void consumerKilledAfterCommitBeforeAckIsReclaimedAndSkippedAsDuplicate() {
    Fixture f = new Fixture(env, "kill-after-commit");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    StreamConsumer doomed = f.consumer("kac").consumerName("doomed").faults(point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT) {
        throw new SimulatedCrash("after commit");
      }
    }).build();
    assertThatThrownBy(doomed::pollOnce).isInstanceOf(SimulatedCrash.class);
    assertThat(f.effectCount("kac")).isEqualTo(3);
    assertThat(f.inboxCount("kac")).isEqualTo(3);
    assertThat(f.pending("kac")).hasSize(3).allSatisfy(p -> assertThat(p.getConsumerName()).isEqualTo("doomed-0"));

    try (StreamConsumer survivor = f.consumer("kac").consumerName("survivor").minIdle(Duration.ofMillis(300))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)).build()) {
      PollResult total = ConsumerTestKit.drain(survivor, Duration.ofSeconds(10));
      assertThat(total.reclaimed()).isEqualTo(3);
      assertThat(total.duplicates()).isEqualTo(3);
      assertThat(total.handled()).isZero();
    }
    assertThat(f.effectCount("kac")).isEqualTo(3);
    assertThat(f.doubleEffects("kac")).isZero();
    assertThat(f.pendingTotal("kac")).isZero();
    doomed.close();
  }

  @Test
  void consumerKilledInsideTheTransactionCommitsNothingAndTheReclaimerDoesItOnce() {
    Fixture f = new Fixture(env, "kill-in-tx");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    // Every handler call, as (message, delivery): what a side effect outside the transaction (an e-mail, an HTTP
    // call) would see.
    List<String> invocations = new CopyOnWriteArrayList<>();
    MessageHandler effect = f.effect("kit", null);
    MessageHandler counting = (tx, m) -> {
      invocations.add(m.messageId() + "#" + m.delivery().count());
      effect.handle(tx, m);
    };
    StreamConsumer doomed = f.consumer("kit").consumerName("doomed").handler(counting).faults(point -> {
      if (point == ConsumerFaults.Point.BEFORE_COMMIT) {
        throw new SimulatedCrash("inside the transaction");
      }
    }).build();
    assertThatThrownBy(doomed::pollOnce).isInstanceOf(SimulatedCrash.class);
    assertThat(f.effectCount("kit")).isZero();
    assertThat(f.inboxCount("kit")).isZero();
    assertThat(f.pending("kit")).hasSize(3).allSatisfy(p -> assertThat(p.getConsumerName()).isEqualTo("doomed-0"));
    assertThat(invocations).as("the doomed consumer ran every handler before it died").hasSize(3);

    try (StreamConsumer survivor = f.consumer("kit").consumerName("survivor").minIdle(Duration.ofMillis(300))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)).handler(counting).build()) {
      PollResult total = ConsumerTestKit.drain(survivor, Duration.ofSeconds(10));
      assertThat(total.reclaimed()).isEqualTo(3);
      assertThat(total.handled()).isEqualTo(3);
    }
    for (StreamMessage m : messages) {
      assertThat(f.effectCount("kit", m.messageId())).isEqualTo(1);
    }
    // One committed effect per message, but the handler ran once per delivery: 3 in the rolled-back transaction,
    // 3 after the reclaim. Anything it did outside the transaction happened twice; that is not promised away.
    assertThat(invocations).hasSize(6);
    assertThat(invocations).containsExactlyInAnyOrderElementsOf(messages.stream()
        .flatMap(m -> java.util.stream.Stream.of(m.messageId() + "#1", m.messageId() + "#2")).toList());
    assertThat(f.inboxCount("kit", "processed")).isEqualTo(3);
    assertThat(f.pendingTotal("kit")).isZero();
    doomed.close();
  }

  @Test
  void jooqHandlerWritesOnTheMarkersTransaction() {
    Fixture f = new Fixture(env, "jooq");
    StreamMessage m = f.message();
    f.publish(m);
    try (StreamConsumer consumer = f.consumerWithoutHandler("j")
        .jooqHandler((tx, msg) -> tx.insertInto(DSL.table(f.effects))
            .columns(DSL.field("consumer_group"), DSL.field("message_id"), DSL.field("tag"))
            .values("j", msg.messageId(), "jooq")
            .execute())
        .build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(1);
    }
    assertThat(env.queryLong("SELECT count(*) FROM " + f.effects + " WHERE tag = 'jooq' AND message_id = ?",
        m.messageId())).isEqualTo(1);
  }

  @Test
  void startedConsumerHandlesEverythingOnceAndReplayChangesNothing() {
    Fixture f = new Fixture(env, "started");
    List<StreamMessage> messages = f.publishMany(250);
    Set<UUID> seen = ConcurrentHashMap.newKeySet();
    try (StreamConsumer consumer = f.consumer("started").workers(2).batchSize(50)
        .listener(new ConsumerListener() {
          @Override
          public void handled(InboundMessage message) {
            seen.add(message.messageId());
          }
        })
        .build()) {
      consumer.start();
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));
      ConsumerTestKit.assertReplayChangesNothing(consumer);
      assertThat(consumer.close(Duration.ofSeconds(5))).isTrue();
    }
    assertThat(f.effectCount("started")).isEqualTo(250);
    assertThat(f.doubleEffects("started")).isZero();
    assertThat(seen).hasSize(250).containsAll(messages.stream().map(StreamMessage::messageId).toList());
    assertThat(f.pendingTotal("started")).isZero();
  }
}
