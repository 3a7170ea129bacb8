package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.ListStatus;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.consumer.testkit.ConsumerTestKit;
import dev.handoff.outbox.ListFormat;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.Transport;
import dev.handoff.outbox.testkit.SimulatedCrash;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;

/**
 * The ledger on the list transport, in one JVM: 3,000 payments through the payment service, a list relay with a small
 * capacity, and two ledger consumers; one consumer process is killed right after a batch committed and before its
 * LREM, and restarts under the same name. Every payment that is not poison is charged exactly once, the lists never
 * hold more than the capacity, and nothing is pushed twice.
 */
@HandoffTest
class LedgerListEndToEndTest {

  private static final int PAYMENTS = 3_000;
  private static final int POISON_EVERY = 1_000;
  private static final int POISON = PAYMENTS / POISON_EVERY;
  private static final int CAPACITY = 150;
  /** Waiting plus in processing of one shard, read atomically (an element moves between them in one step). */
  private static final String HELD = "local n = redis.call('LLEN', KEYS[2])"
      + " for _, p in ipairs(redis.call('HKEYS', KEYS[1])) do n = n + redis.call('LLEN', p) end return n";

  private final TestEnvironment env;

  LedgerListEndToEndTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void threeThousandPaymentsOnListsWithAConsumerKilledBeforeItsLremAreChargedExactlyOnce() throws Exception {
    // given
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());
    Relay relay = Relay.builder(env.dataSource(), env.redis())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .listTransport(CAPACITY)
        .idlePollInterval(Duration.ofMillis(50))
        .build();
    AtomicBoolean killing = new AtomicBoolean();
    AtomicBoolean killed = new AtomicBoolean();
    // Read at the kill itself: from then on the reaper of consumer b may return these elements at any time.
    AtomicLong heldAtKill = new AtomicLong();
    List<LedgerConsumer> all = new ArrayList<>();
    // The hook runs inside consumer a, so it finds a through this holder (set before a runs).
    AtomicReference<LedgerConsumer> self = new AtomicReference<>();
    LedgerConsumer a = consumer("a", point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT && self.get().counters().handled() >= PAYMENTS / 3
          && killing.compareAndSet(false, true)) {
        heldAtKill.set(heldBy("a-0") + heldBy("a-1"));
        killed.set(true);
        throw new SimulatedCrash("after commit, before LREM");
      }
    });
    self.set(a);
    LedgerConsumer b = consumer("b", ConsumerFaults.NONE);
    all.add(a);
    all.add(b);
    AtomicLong mostHeld = new AtomicLong();
    AtomicLong mostBacklog = new AtomicLong();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> {
      while (sampling.get()) {
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
          long held = (Long) env.redis().eval(HELD, 2, ListFormat.consumersKey(list), list);
          mostHeld.accumulateAndGet(held, Math::max);
        }
        mostBacklog.accumulateAndGet(unpublished(), Math::max);
      }
    }, "sampler");
    try {
      relay.start();
      a.start();
      b.start();
      sampler.start();

      // when: payments arrive while consumer a dies after a commit, before its LREM, and restarts under its name
      List<Payment> batch = new ArrayList<>();
      for (int i = 1; i <= PAYMENTS; i++) {
        batch.add(new Payment(String.format("lp-%05d", i), "acct-" + (i % 50), 100 + i, i % POISON_EVERY == 0));
        if (batch.size() == 100) {
          payments.payAll(batch);
          batch.clear();
        }
      }
      await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(30)).until(killed::get);
      ConsumerTestKit.kill(a.listConsumer()); // the process dies: no heartbeats, its lists stay as they are
      a.close(Duration.ofSeconds(1));
      long heldByDead = heldAtKill.get();
      LedgerConsumer restarted = consumer("a", ConsumerFaults.NONE);
      all.add(restarted);
      restarted.start();

      // then
      await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(100))
          .until(() ->
          charges() == PAYMENTS - POISON
              && env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == POISON
              && listStatus().drained());
      sampling.set(false);
      sampler.join(5_000);
      assertThat(heldByDead).as("the killed process left its committed batch in its processing list").isPositive();
      long duplicates = all.stream().mapToLong(c -> c.counters().duplicates()).sum();
      assertThat(duplicates).as("the returned batch met its inbox markers").isGreaterThanOrEqualTo(1);
      assertThat(charges()).isEqualTo(PAYMENTS - POISON);
      assertThat(env.queryLong("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'ledger'"))
          .isEqualTo(PAYMENTS - POISON);
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isEqualTo(PAYMENTS);
      assertThat(pushed()).as("nothing pushed twice").isEqualTo(PAYMENTS);
      assertThat(mostHeld.get()).as("waiting + in processing per shard").isLessThanOrEqualTo(CAPACITY);
      assertThat(mostBacklog.get()).as("the outbox held the backlog at the capacity").isPositive();
      ListStatus status = listStatus();
      assertThat(status.waiting()).isZero();
      assertThat(status.inProcessing()).isZero();
      assertThat(status.outboxBacklog()).isZero();
      assertThat(status.deadLetters()).isEqualTo(POISON);
      assertThat(status.shards()).allSatisfy(s -> assertThat(s.capacity()).isEqualTo(CAPACITY));
      LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), "ledger");
      assertThat(audit.passed()).as(String.join("\n", audit.lines())).isTrue();
    } finally {
      sampling.set(false);
      for (LedgerConsumer c : all) {
        c.close(Duration.ofSeconds(5));
      }
      relay.close(Duration.ofSeconds(5));
    }
  }

  private LedgerConsumer consumer(String name, ConsumerFaults faults) {
    return LedgerConsumer.builder(env.dataSource(), HostAndPort.from(env.redisUri().getAuthority()))
        .faults(faults)
        .transport(Transport.LIST)
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .consumerName(name)
        .workers(2)
        .batchSize(50)
        .block(Duration.ofMillis(100))
        .minIdle(Duration.ofSeconds(1))
        .reclaimInterval(Duration.ofMillis(100))
        .maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100))
        .persistStats(false)
        .build();
  }

  private ListStatus listStatus() {
    return LedgerStatus.collect(env.dataSource(), env.redis(), HostAndPort.from(env.redisUri().getAuthority()),
        redis.clients.jedis.DefaultJedisClientConfig.builder().build(), env.schema(), env.keyPrefix(),
        Transport.LIST, "ledger").lists().status();
  }

  private long heldBy(String worker) {
    long n = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
      n += env.redis().llen(ListFormat.processingKey(list, worker));
    }
    return n;
  }

  private long pushed() {
    long n = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
      n += Long.parseLong(env.redis().hget(ListFormat.relayKey(list), "added"));
    }
    return n;
  }

  private long unpublished() {
    return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL");
  }

  private long charges() {
    return env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
  }
}
