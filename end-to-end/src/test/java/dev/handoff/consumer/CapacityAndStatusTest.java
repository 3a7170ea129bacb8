package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XTrimParams;

@HandoffTest
class CapacityAndStatusTest {

  private final TestEnvironment env;

  CapacityAndStatusTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void slowHandlerUnderAFloodNeverHoldsMoreThanWorkersTimesBatchPending() throws Exception {
    Fixture f = new Fixture(env, "flood");
    f.createGroupAtStart("slow");
    f.publishMany(300);
    MessageHandler effect = f.effect("slow", null);
    AtomicLong maxPending = new AtomicLong();
    try (StreamConsumer consumer = f.consumer("slow").workers(2).batchSize(5)
        .handler((tx, m) -> {
          Thread.sleep(5);
          effect.handle(tx, m);
        }).build()) {
      consumer.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (f.effectCount("slow") < 300 && System.nanoTime() < deadline) {
        ConsumerStatus status = consumer.status();
        maxPending.accumulateAndGet(f.pendingTotal("slow"), Math::max);
        // backlog stays in the stream, undelivered, instead of queueing in the consumer
        assertThat(status.pending()).isLessThanOrEqualTo(10);
        assertThat(status.backlog() + status.pending() + f.effectCount("slow")).isGreaterThanOrEqualTo(300);
        Thread.sleep(5);
      }
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(10));
    }
    assertThat(maxPending.get()).isBetween(1L, 10L);
    assertThat(f.effectCount("slow")).isEqualTo(300);
    assertThat(f.doubleEffects("slow")).isZero();
  }

  @Test
  void statusReportsNeverDeliveredBacklogAndPendingAsDifferentNumbers() {
    Fixture f = new Fixture(env, "backlog");
    List<StreamMessage> messages = f.publishMany(3000);
    try (StreamConsumer consumer = f.consumer("s1").batchSize(10).build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(10);

      // seed S1: XPENDING says 0 while 2,990 entries were never delivered
      assertThat(f.redis.xpending(f.streamKey(), "s1").getTotal()).isZero();
      ConsumerStatus status = consumer.status();
      ConsumerStatus.StreamStatus s = status.streams().get(0);
      assertThat(s.pending().count()).isZero();
      assertThat(s.backlog()).isEqualTo(2990);
      assertThat(s.backlogExact()).isTrue();
      assertThat(s.length()).isEqualTo(3000);
      assertThat(status.drained()).isFalse();

      // a consumer dies holding 10: pending and backlog now both non-zero, and still different
      StreamConsumer doomed = f.consumer("s1").consumerName("doomed").batchSize(10).faults(p -> {
        if (p == ConsumerFaults.Point.BEFORE_COMMIT) {
          throw new SimulatedCrash("before commit");
        }
      }).build();
      assertThatThrownBy(doomed::pollOnce).isInstanceOf(SimulatedCrash.class);
      doomed.close();
      // a tombstone after the last-delivered ID: 7.0's lag would go nil; the counted backlog stays exact
      String deleted = f.redis.xrange(f.streamKey(), "-", "+", 3000).get(2999).getID().toString();
      f.redis.xdel(f.streamKey(), new StreamEntryID(deleted));

      s = consumer.status().streams().get(0);
      assertThat(s.pending().count()).isEqualTo(10);
      assertThat(s.backlog()).isEqualTo(2979);
      assertThat(s.pending().consumers()).isEqualTo(Map.of("doomed-0", 10L));
      assertThat(s.pending().deliveryHistogram()).isEqualTo(Map.of(1L, 10L));
      assertThat(s.pending().oldestAge()).isNotNull().isGreaterThanOrEqualTo(Duration.ZERO);
      assertThat(s.lastDeliveredId()).isNotNull();

      // a small scan limit gives an honest lower bound
      try (StreamConsumer limited = f.consumer("s1").statusScanLimit(1000).build()) {
        ConsumerStatus.StreamStatus l = limited.status().streams().get(0);
        assertThat(l.backlog()).isEqualTo(1000);
        assertThat(l.backlogExact()).isFalse();
      }
      try (StreamConsumer exactFit = f.consumer("s1").statusScanLimit(2979).build()) {
        ConsumerStatus.StreamStatus l = exactFit.status().streams().get(0);
        assertThat(l.backlog()).isEqualTo(2979);
        assertThat(l.backlogExact()).isTrue();
      }
    }
    assertThat(messages).hasSize(3000);
  }

  @Test
  void twoConsumersInOneGroupSplitTheWorkAndTwoGroupsEachSeeEverything() throws Exception {
    Fixture f = new Fixture(env, "split");
    f.createGroupAtStart("g1");
    f.createGroupAtStart("g2");
    CountDownLatch bothReading = new CountDownLatch(2);
    try (StreamConsumer a = f.consumer("g1").consumerName("a").batchSize(10)
            .handler(slowEffect(f, "g1", "a", bothReading)).build();
        StreamConsumer b = f.consumer("g1").consumerName("b").batchSize(10)
            .handler(slowEffect(f, "g1", "b", bothReading)).build();
        StreamConsumer other = f.consumer("g2").handler(f.effect("g2", "c")).build()) {
      a.start();
      b.start();
      other.start();
      f.publishMany(400);
      ConsumerTestKit.awaitDrained(a, Duration.ofSeconds(30));
      ConsumerTestKit.awaitDrained(other, Duration.ofSeconds(30));
    }
    long byA = env.queryLong("SELECT count(*) FROM " + f.effects + " WHERE consumer_group = 'g1' AND tag = 'a'");
    long byB = env.queryLong("SELECT count(*) FROM " + f.effects + " WHERE consumer_group = 'g1' AND tag = 'b'");
    assertThat(byA + byB).isEqualTo(400);
    assertThat(byA).isPositive();
    assertThat(byB).isPositive();
    assertThat(f.doubleEffects("g1")).isZero();
    assertThat(f.effectCount("g2")).isEqualTo(400);
    assertThat(f.doubleEffects("g2")).isZero();
    assertThat(f.inboxCount("g1")).isEqualTo(400);
    assertThat(f.inboxCount("g2")).isEqualTo(400);
  }

  /**
   * Each consumer's first message waits until the other consumer has one too: while one holds its first batch the
   * other reads the next, so both take part whatever the threads' start-up order.
   */
  private static MessageHandler slowEffect(Fixture f, String group, String tag, CountDownLatch bothReading) {
    MessageHandler effect = f.effect(group, tag);
    java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
    return (tx, m) -> {
      if (first.compareAndSet(true, false)) {
        bothReading.countDown();
        if (!bothReading.await(20, TimeUnit.SECONDS)) {
          throw new AssertionError("the other consumer of group " + group + " got no message");
        }
      }
      Thread.sleep(2);
      effect.handle(tx, m);
    };
  }

  @Test
  void inboxPurgeRefusesToDropMarkersOfMessagesStillInTheStream() {
    Fixture f = new Fixture(env, "purge");
    List<StreamMessage> messages = f.publishMany(5);
    Instant later = Instant.now().plus(1, ChronoUnit.HOURS);
    try (StreamConsumer consumer = f.consumer("p").build()) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      assertThat(f.inboxCount("p")).isEqualTo(5);

      InboxPurgeRefusedException all = org.junit.jupiter.api.Assertions.assertThrows(
          InboxPurgeRefusedException.class, () -> consumer.purgeInbox(later));
      assertThat(all.stillRetained()).isEqualTo(5);
      assertThat(all.getMessage()).contains("5 marker(s)").contains("still retained");
      assertThat(f.inboxCount("p")).isEqualTo(5);

      // retention trims the first three; two are still in the stream, so the purge is still refused
      List<String> ids = f.redis.xrange(f.streamKey(), "-", "+", 10).stream().map(e -> e.getID().toString())
          .toList();
      f.redis.xtrim(f.streamKey(), XTrimParams.xTrimParams().minId(ids.get(3)));
      InboxPurgeRefusedException some = org.junit.jupiter.api.Assertions.assertThrows(
          InboxPurgeRefusedException.class, () -> consumer.purgeInbox(later));
      assertThat(some.stillRetained()).isEqualTo(2);
      assertThat(f.inboxCount("p")).isEqualTo(5);

      // markers older than the cutoff must be gone from the stream: a cutoff in the past purges nothing
      assertThat(consumer.purgeInbox(Instant.now().minus(1, ChronoUnit.HOURS))).isZero();

      // once the stream holds none of them, they may go
      f.redis.xtrim(f.streamKey(), XTrimParams.xTrimParams().maxLen(0));
      assertThat(consumer.purgeInbox(later)).isEqualTo(5);
      assertThat(f.inboxCount("p")).isZero();

      // a missing stream (Redis lost it, the relay may re-publish) refuses outright
      f.publishMany(1);
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      f.redis.del(f.streamKey());
      assertThatThrownBy(() -> consumer.purgeInbox(later))
          .isInstanceOf(InboxPurgeRefusedException.class)
          .hasMessageContaining("does not exist");
      assertThat(f.inboxCount("p")).isEqualTo(1);
    }
    assertThat(messages).hasSize(5);
  }

  @Test
  void closeWithADeadlineAbandonsTheBatchInFlightUnacknowledged() throws Exception {
    Fixture f = new Fixture(env, "close");
    f.createGroupAtStart("c");
    CountDownLatch inHandler = new CountDownLatch(1);
    MessageHandler effect = f.effect("c", null);
    StreamConsumer consumer = f.consumer("c").handler((tx, m) -> {
      inHandler.countDown();
      Thread.sleep(10_000);
      effect.handle(tx, m);
    }).build();
    f.publishMany(3);
    consumer.start();
    assertThat(inHandler.await(5, TimeUnit.SECONDS)).isTrue();
    long started = System.nanoTime();
    assertThat(consumer.close(Duration.ofMillis(300))).isFalse();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
    assertThat(consumer.close(Duration.ofMillis(300))).as("a second close reports the first close's outcome")
        .isFalse();
    assertThat(f.effectCount("c")).isZero();
    assertThat(f.inboxCount("c")).isZero();
    assertThat(f.pendingTotal("c")).isEqualTo(3); // abandoned, not acknowledged: another consumer will claim them
  }
}
