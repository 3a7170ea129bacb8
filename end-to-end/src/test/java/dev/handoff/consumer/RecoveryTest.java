package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.SimulatedCrash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XClaimParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamPendingEntry;

@HandoffTest
class RecoveryTest {

  private final TestEnvironment env;

  RecoveryTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void reclaimsEveryOneOf5000AbandonedEntriesWithCount100ByFollowingTheCursor() {
    Fixture f = new Fixture(env, "abandoned");
    f.createGroupAtStart("g");
    // 1,500 entries at the head of the PEL belong to a live consumer (idle ~0): an XAUTOCLAIM from 0-0 with
    // COUNT 100 looks at no more than 1,000 entries, finds nothing claimable and returns a cursor. Only a scan that
    // follows the cursor reaches the 5,000 abandoned entries behind them.
    f.publishMany(1500);
    List<StreamMessage> abandoned = f.publishMany(5000);
    f.redis.xreadGroup("g", "busy", XReadGroupParams.xReadGroupParams().count(1500),
        Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    var ghostRead = f.redis.xreadGroup("g", "ghost", XReadGroupParams.xReadGroupParams().count(5000),
        Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    StreamEntryID[] ghostIds = ghostRead.get(0).getValue().stream().map(e -> e.getID()).toArray(StreamEntryID[]::new);
    assertThat(ghostIds).hasSize(5000);
    // the ghost died a minute ago
    f.redis.xclaimJustId(f.streamKey(), "g", "ghost", 0, XClaimParams.xClaimParams().idle(60_000), ghostIds);

    try (StreamConsumer consumer = f.consumer("g").batchSize(100).minIdle(Duration.ofSeconds(30))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)).build()) {
      PollResult total = PollResult.EMPTY;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (f.effectCount("g") < 5000 && System.nanoTime() < deadline) {
        PollResult r = consumer.pollOnce();
        assertThat(r.read()).isLessThanOrEqualTo(100);
        total = total.plus(r);
      }
      assertThat(total.reclaimed()).isEqualTo(5000);
      assertThat(total.handled()).isEqualTo(5000);
    }
    assertThat(f.effectCount("g")).isEqualTo(5000);
    assertThat(f.doubleEffects("g")).isZero();
    for (StreamMessage m : List.of(abandoned.get(0), abandoned.get(2500), abandoned.get(4999))) {
      assertThat(f.effectCount("g", m.messageId())).isEqualTo(1);
    }
    List<StreamPendingEntry> pending = f.pending("g");
    assertThat(pending).hasSize(1500).allSatisfy(p -> assertThat(p.getConsumerName()).isEqualTo("busy"));
  }

  @Test
  void trimmedPendingEntryIsRecordedAsLostAcknowledgedAndTheOwnReplayEnds() {
    Fixture f = new Fixture(env, "trimmed");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message());
    List<String> ids = new ArrayList<>();
    messages.forEach(m -> ids.add(f.publish(m)));
    StreamConsumer crashed = f.consumer("g").consumerName("stable").faults(point -> {
      if (point == ConsumerFaults.Point.BEFORE_COMMIT) {
        throw new SimulatedCrash("before commit");
      }
    }).build();
    assertThatThrownBy(crashed::pollOnce).isInstanceOf(SimulatedCrash.class);
    crashed.close();
    assertThat(f.pending("g")).hasSize(3);
    // retention trims the middle entry while it is still pending
    f.redis.xdel(f.streamKey(), new StreamEntryID(ids.get(1)));

    List<String> lost = new CopyOnWriteArrayList<>();
    // the process restarts under the same (stable) name and replays its own PEL from 0-0
    try (StreamConsumer restarted = f.consumer("g").consumerName("stable").listener(new ConsumerListener() {
      @Override
      public void lost(String streamKey, String streamId) {
        lost.add(streamId);
      }
    }).build()) {
      PollResult replay = restarted.pollOnce();
      assertThat(replay.read()).isEqualTo(3);
      assertThat(replay.handled()).isEqualTo(2);
      assertThat(replay.lost()).isEqualTo(1);
      assertThat(replay.reclaimed()).isZero();
      assertThat(f.pendingTotal("g")).isZero();
      assertThat(restarted.pollOnce().read()).isZero(); // the replay loop ended
      assertThat(lost).containsExactly(ids.get(1));
      // Group "g" of this class's other tests has dead letters of other topics, whichever order they ran in.
      List<DeadLetter> dead = restarted.deadLetters(10).stream().filter(d -> d.topic().equals("trimmed")).toList();
      assertThat(dead).hasSize(1);
      assertThat(dead.get(0).delivery().streamId()).isEqualTo(ids.get(1));
      assertThat(dead.get(0).error()).startsWith("lost: ");
      assertThat(dead.get(0).messageId()).isNull();
    }
    assertThat(f.effectCount("g", messages.get(0).messageId())).isEqualTo(1);
    assertThat(f.effectCount("g", messages.get(1).messageId())).isZero();
    assertThat(f.effectCount("g", messages.get(2).messageId())).isEqualTo(1);
  }

  @Test
  void trimmedEntryFoundByXautoclaimIsRecordedAsLostWithItsMessageFromTheOutbox() {
    Fixture f = new Fixture(env, "trimmed-claim");
    f.createGroupAtStart("g");
    StreamMessage m = f.message();
    String id = f.publish(m);
    // the outbox row the relay published as that entry (same database, same schema)
    long ms = Long.parseLong(id.substring(0, id.indexOf('-')));
    long seq = Long.parseLong(id.substring(id.indexOf('-') + 1));
    env.execute("INSERT INTO outbox (message_id, topic, shard, message_key, type, payload, headers, stream_ms,"
        + " stream_seq, published_at) VALUES ('" + m.messageId() + "', 'trimmed-claim', 0, 'k', 'test.event',"
        + " '\\x7b7d', '{}', " + ms + ", " + seq + ", now())");
    f.redis.xreadGroup("g", "ghost", XReadGroupParams.xReadGroupParams().count(10),
        Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    f.redis.xclaimJustId(f.streamKey(), "g", "ghost", 0, XClaimParams.xClaimParams().idle(60_000),
        new StreamEntryID(id));
    // trimmed after the ghost died (an XCLAIM after the XDEL would itself purge it from the PEL)
    f.redis.xdel(f.streamKey(), new StreamEntryID(id));
    try (StreamConsumer consumer = f.consumer("g").build()) {
      PollResult r = consumer.pollOnce();
      assertThat(r.lost()).isEqualTo(1);
      assertThat(f.pendingTotal("g")).isZero();
      DeadLetter d = consumer.deadLetters(10).stream().filter(x -> x.topic().equals("trimmed-claim")).findFirst()
          .orElseThrow();
      assertThat(d.messageId()).isEqualTo(m.messageId());
      assertThat(d.error()).startsWith("lost: ").contains("recovered from the outbox");
      assertThat(d.retryable()).isTrue();
      assertThat(consumer.retry(d.id())).isTrue();
    }
    assertThat(f.effectCount("g", m.messageId())).isEqualTo(1);
  }

  @Test
  void aHandlerRunningPastMinIdleIsNotStolenThanksToLeaseRenewal() throws Exception {
    Fixture f = new Fixture(env, "lease");
    StreamMessage slow = f.message();
    // Time is not waited out here: the entry is made idle far past minIdle by hand (as a long handler would leave
    // it without renewal), and the renewal runs when the test says so.
    Duration minIdle = Duration.ofSeconds(30);
    CountDownLatch slowStarted = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger slowRuns = new AtomicInteger();
    AtomicInteger claimedByOther = new AtomicInteger();
    MessageHandler effect = f.effect("g", null);
    MessageHandler handler = (tx, m) -> {
      if (m.messageId().equals(slow.messageId())) {
        slowRuns.incrementAndGet();
        slowStarted.countDown();
        assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
      }
      effect.handle(tx, m);
    };
    try (StreamConsumer owner = f.consumer("g").consumerName("owner").minIdle(minIdle)
            .leaseRenewInterval(Duration.ofSeconds(10)).handler(handler).build();
        StreamConsumer other = f.consumer("g").consumerName("other").minIdle(minIdle).handler(handler)
            .listener(new ConsumerListener() {
              @Override
              public void reclaimed(String streamKey, int count) {
                claimedByOther.addAndGet(count);
              }
            }).build()) {
      f.createGroupAtStart("g");
      f.publish(slow);
      owner.start();
      assertThat(slowStarted.await(10, TimeUnit.SECONDS)).isTrue();
      String id = f.pending("g").get(0).getID().toString();
      f.redis.xclaimJustId(f.streamKey(), "g", "owner-0", 0, XClaimParams.xClaimParams().idle(60_000),
          new StreamEntryID(id));
      assertThat(f.pending("g").get(0).getIdleTime()).isGreaterThanOrEqualTo(60_000);

      owner.maintainOnce();

      StreamPendingEntry renewed = f.pending("g").get(0);
      assertThat(renewed.getConsumerName()).isEqualTo("owner-0");
      assertThat(renewed.getIdleTime()).isLessThan(minIdle.toMillis());
      assertThat(renewed.getDeliveredTimes()).isEqualTo(1);
      PollResult stolen = other.pollOnce();
      assertThat(stolen.reclaimed()).isZero();
      release.countDown();
      ConsumerTestKit.awaitDrained(owner, Duration.ofSeconds(10));
    }
    assertThat(slowRuns).hasValue(1);
    assertThat(claimedByOther).hasValue(0);
    assertThat(f.effectCount("g", slow.messageId())).isEqualTo(1);
  }

  @Test
  void leaseRenewalNeverTakesBackAnEntryThatAnotherConsumerClaimedAndTheEffectStaysSingle() throws Exception {
    Fixture f = new Fixture(env, "lease-lost");
    StreamMessage slow = f.message();
    // The scheduled renewal is far off: only the explicit maintainOnce() below renews.
    Duration minIdle = Duration.ofMinutes(10);
    CountDownLatch slowStarted = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger runs = new AtomicInteger();
    List<String> leaseLost = new CopyOnWriteArrayList<>();
    MessageHandler effect = f.effect("ll", null);
    MessageHandler handler = (tx, m) -> {
      runs.incrementAndGet();
      slowStarted.countDown();
      assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
      effect.handle(tx, m);
    };
    f.createGroupAtStart("ll");
    String id = f.publish(slow);
    try (StreamConsumer a = f.consumer("ll").consumerName("a").minIdle(minIdle)
        .leaseRenewInterval(Duration.ofMinutes(4)).handler(handler).listener(new ConsumerListener() {
          @Override
          public void leaseLost(String streamKey, String streamId) {
            leaseLost.add(streamId);
          }
        }).build()) {
      a.start();
      try {
        assertThat(slowStarted.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(f.pending("ll")).singleElement().extracting(StreamPendingEntry::getConsumerName)
            .isEqualTo("a-0");
      // A reclaimer that found the entry idle past minIdle takes it (XCLAIM, as XAUTOCLAIM would); the idle time is
      // set by hand rather than waited out.
        f.redis.xclaimJustId(f.streamKey(), "ll", "thief-0", 0, XClaimParams.xClaimParams().idle(60_000),
            new StreamEntryID(id));

        a.maintainOnce();

        List<StreamPendingEntry> after = f.pending("ll");
        assertThat(after).hasSize(1);
        assertThat(after.get(0).getConsumerName()).as("owner after A's renewal").isEqualTo("thief-0");
        assertThat(after.get(0).getIdleTime()).as("A did not reset the thief's idle time")
            .isGreaterThanOrEqualTo(60_000);
        assertThat(leaseLost).containsExactly(id);
      } finally {
        release.countDown();
      }
      ConsumerTestKit.awaitDrained(a, Duration.ofSeconds(10));
    }
    // A's marker and effect commit in one transaction. A then XACKs the entry although the thief owns it (XACK does
    // not check the owner), so the thief has nothing left to handle; and had it got a delivery first or later, its
    // marker insert would have met A's marker (waiting on A's uncommitted row, then ON CONFLICT DO NOTHING) and
    // skipped the handler as a duplicate. The effect cannot happen twice, whichever consumer gets there.
    try (StreamConsumer thief = f.consumer("ll").consumerName("thief").build()) {
      assertThat(thief.pollOnce().read()).isZero();
      PollResult redelivered = ConsumerTestKit.assertReplayChangesNothing(thief);
      assertThat(redelivered.duplicates()).isEqualTo(1);
    }
    assertThat(runs).hasValue(1);
    assertThat(f.effectCount("ll", slow.messageId())).isEqualTo(1);
    assertThat(f.inboxCount("ll", "processed")).isEqualTo(1);
    assertThat(f.pendingTotal("ll")).isZero();
  }

  @Test
  void theOwnPendingReplayOnStartPagesUntilEmptyWithoutReclaiming() {
    Fixture f = new Fixture(env, "own-pages");
    f.createGroupAtStart("own");
    List<StreamMessage> messages = f.publishMany(25);
    // A previous process under the stable name read 25 entries as its worker 0 and died holding them.
    var read = f.redis.xreadGroup("own", "stable-0", XReadGroupParams.xReadGroupParams().count(25),
        Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    assertThat(read.get(0).getValue()).hasSize(25);
    assertThat(f.pending("own")).hasSize(25);

    List<Integer> reads = new ArrayList<>();
    PollResult total = PollResult.EMPTY;
    // minIdle far past the test: no reclaim may take the entries, only the own replay can reach them.
    try (StreamConsumer restarted = f.consumer("own").consumerName("stable").batchSize(10)
        .minIdle(Duration.ofMinutes(10)).build()) {
      assertThat(restarted.config().workerName(0)).isEqualTo("stable-0");
      for (int i = 0; i < 10; i++) {
        PollResult r = restarted.pollOnce();
        if (r.isEmpty()) {
          break;
        }
        reads.add(r.read());
        total = total.plus(r);
      }
    }
    assertThat(reads).allSatisfy(n -> assertThat(n).isLessThanOrEqualTo(10)).containsExactly(10, 10, 5);
    assertThat(total.handled()).isEqualTo(25);
    assertThat(total.reclaimed()).isZero();
    assertThat(f.pendingTotal("own")).isZero();
    for (StreamMessage m : messages) {
      assertThat(f.effectCount("own", m.messageId())).isEqualTo(1);
    }
  }

  @Test
  void privateRedisRestartedWithoutPersistenceRecreatesTheGroupFromTheBeginning() {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    Fixture f = new Fixture(env, "restart", redis, server.uri());
    List<StreamMessage> first = new ArrayList<>();
    for (int i = 1; i <= 10; i++) {
      StreamMessage m = f.message();
      first.add(m);
      f.publish(m, "1000-" + i, 0);
    }
    List<String> recreated = new CopyOnWriteArrayList<>();
    try (StreamConsumer consumer = f.consumer("rg").minIdle(Duration.ofSeconds(1))
        .listener(new ConsumerListener() {
          @Override
          public void groupRecreated(String streamKey) {
            recreated.add(streamKey);
          }
        }).build()) {
      consumer.start();
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(10));
      assertThat(f.effectCount("rg")).isEqualTo(10);

      server.restart(); // streams, groups and scripts are gone

      // the relay re-publishes what it had published (same IDs), then new messages follow
      List<StreamMessage> next = new ArrayList<>();
      ConsumerTestKit.await("Redis is back", Duration.ofSeconds(10), () -> {
        try {
          return "PONG".equals(redis.ping());
        } catch (RuntimeException e) {
          return false;
        }
      });
      for (int i = 1; i <= 10; i++) {
        f.publish(first.get(i - 1), "1000-" + i, 0);
      }
      for (int i = 11; i <= 15; i++) {
        StreamMessage m = f.message();
        next.add(m);
        f.publish(m, "1000-" + i, 0);
      }
      ConsumerTestKit.await("all 15 messages have their effect", Duration.ofSeconds(20),
          () -> f.effectCount("rg") >= 15 && consumer.status().drained());
      assertThat(recreated).containsExactly(f.streamKey());
      for (StreamMessage m : next) {
        assertThat(f.effectCount("rg", m.messageId())).isEqualTo(1);
      }
      assertThat(consumer.status().duplicatesSkipped()).isEqualTo(10);
    }
    assertThat(f.effectCount("rg")).isEqualTo(15);
    assertThat(f.doubleEffects("rg")).isZero();
    assertThat(f.inboxCount("rg")).isEqualTo(15);
  }

  static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
