package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RelayListener;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.KillSwitch;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.ToLongFunction;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The whole chain in one JVM, once per transport: payments through the payment service, a relay and ledger consumers
 * that are killed midway, then a full replay from the outbox: every payment that is not poison is charged exactly
 * once, and the ledger's audit passes.
 *
 * <ul>
 *   <li>{@link LedgerEndToEndOnStreamsTest}: 10,000 payments, three consumers whose worker threads are killed at
 *       random (before or after their batch commits) and replaced, and first a replay of what the streams retain
 *       through the group. The relay trims the streams as it likes meanwhile (a short maintenance interval); every
 *       count holds whatever it trimmed, because the test counts what it evicted.
 *   <li>{@link LedgerEndToEndOnListsTest}: 3,000 payments, a list relay with a small capacity and two consumers; one
 *       consumer process is killed right after a batch committed and before its LREM, and restarts under the same
 *       name. The lists never hold more than the capacity, and nothing is pushed twice.
 * </ul>
 */
@HandoffTest
abstract class LedgerEndToEndTest {

  private static final int LIST_CAPACITY = 150;
  /** Waiting plus in processing of one shard, read atomically (an element moves between them in one step). */
  private static final String HELD = "local n = redis.call('LLEN', KEYS[2])"
      + " for _, p in ipairs(redis.call('HKEYS', KEYS[1])) do n = n + redis.call('LLEN', p) end return n";

  private final TestEnvironment env;
  private final Transport transport;
  private final List<LedgerConsumer> all = Collections.synchronizedList(new ArrayList<>());

  LedgerEndToEndTest(TestEnvironment env, Transport transport) {
    this.env = env;
    this.transport = transport;
  }

  @Test
  void paymentsWithConsumersKilledMidwayAndAFullReplayAreChargedExactlyOnce() throws Exception {
    // given
    Faults faults = transport == Transport.STREAM ? new RandomKillsOnStreams() : new KillBeforeLremOnLists();
    int poison = faults.payments / faults.poisonEvery;
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());
    Relay relay = faults.relay(Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)).build();
    try {
      relay.start();
      faults.start();

      // when: payments arrive in batches while consumers die and are replaced
      List<Payment> batch = new ArrayList<>();
      for (int i = 1; i <= faults.payments; i++) {
        batch.add(faults.payment(i));
        if (batch.size() == faults.batch) {
          assertThat(payments.payAll(batch)).isEqualTo(faults.batch);
          batch.clear();
          faults.replaceDead();
        }
      }
      faults.afterPayments();
      try {
        await("every payment charged or dead-lettered (" + faults + ")").dontCatchUncaughtExceptions()
            .atMost(faults.deadline).pollInterval(Duration.ofMillis(100)).pollInSameThread().until(() -> {
              faults.replaceDead();
              return charges() == faults.payments - poison
                  && count("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == poison
                  && faults.drained();
            });
      } catch (ConditionTimeoutException e) {
        throw new AssertionError(e.getMessage() + "; charges " + charges() + ", " + faults, e);
      }
      faults.replayRetained();
      // and a full replay of the history from the outbox, which holds every row whatever Redis was trimmed to
      ReplayResult replay = ConsumerTestKit.assertReplayChangesNothing(faults.live().handoff(), OutboxRange.all());
      relay.close(); // no trim from here on, so that the streams and the trimmed count are read at one point

      // then
      assertThat(replay.offered()).isEqualTo(faults.payments);
      assertThat(replay.duplicates()).isEqualTo(faults.payments);
      assertThat(count("SELECT count(*) FROM payment")).isEqualTo(faults.payments);
      assertThat(count("SELECT count(*) FROM outbox")).isEqualTo(faults.payments);
      assertThat(charges()).isEqualTo(faults.payments - poison);
      assertThat(count("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'ledger'"))
          .isEqualTo(faults.payments - poison);
      assertThat(count("SELECT count(*) FROM charge c JOIN payment p USING (payment_id) WHERE p.poison")).isZero();
      assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isEqualTo(faults.payments);
      assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'processed'"))
          .isEqualTo(faults.payments - poison);
      assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'dead'"))
          .isEqualTo(poison);
      faults.assertTransport();
      LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), LedgerConsumer.DEFAULT_GROUP);
      assertThat(audit.passed()).as("audit %s (%s)%n%s", audit, faults, String.join("\n", audit.lines())).isTrue();
      assertThat(audit.payments()).isEqualTo(faults.payments);
      assertThat(audit.poison()).isEqualTo(poison);
      assertThat(audit.charges()).isEqualTo(faults.payments - poison);
      assertThat(audit.missing()).isZero();
      assertThat(audit.duplicated()).isZero();
      assertThat(audit.orphans()).isZero();
      assertThat(audit.deadLetters()).isEqualTo(poison);
    } finally {
      faults.stop();
      synchronized (all) {
        for (LedgerConsumer c : all) {
          c.close(Duration.ofSeconds(5));
        }
      }
      relay.close(Duration.ofSeconds(5));
    }
  }

  /** How the consumers of one transport are run and killed, and what that transport must show afterwards. */
  private abstract class Faults {

    final int payments;
    final int poisonEvery;
    final int batch;
    final Duration deadline;

    Faults(int payments, int poisonEvery, int batch, Duration deadline) {
      this.payments = payments;
      this.poisonEvery = poisonEvery;
      this.batch = batch;
      this.deadline = deadline;
    }

    abstract RelayBuilder relay(RelayBuilder builder);

    abstract Payment payment(int i);

    /** Starts the consumers. */
    abstract void start();

    /** Replaces consumers that died; the loops call it after each batch of payments and while they wait. */
    void replaceDead() {}

    /** Runs once every payment was made. */
    void afterPayments() throws Exception {}

    /** Nothing waiting or in flight in Redis. */
    abstract boolean drained();

    /** A consumer that is running at the end. */
    abstract LedgerConsumer live();

    /** Replays what Redis still holds, where the transport can. */
    void replayRetained() {}

    /** What only this transport shows. */
    abstract void assertTransport();

    void stop() throws InterruptedException {}
  }

  /** Streams: worker threads killed at random before or after their commit, the group rewound to 0-0. */
  private final class RandomKillsOnStreams extends Faults {

    private static final int MAX_KILLS = 8;

    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final AtomicLong trimmed = new AtomicLong();
    private final AtomicInteger kills = new AtomicInteger();
    private final LedgerConsumer[] running = new LedgerConsumer[3];
    private final boolean[] dead = new boolean[3];
    private final IntFunction<LedgerConsumer> startConsumer;
    private int generation;

    RandomKillsOnStreams() {
      super(10_000, 2_500, 250, Duration.ofSeconds(120));
      startConsumer = slot -> {
        LedgerConsumer c = streamLedger("c" + slot + "-" + generation++, point -> {
          synchronized (random) {
            if (!dead[slot] && kills.get() < MAX_KILLS && random.nextInt(40) == 0) {
              dead[slot] = true;
              kills.incrementAndGet();
              throw new SimulatedCrash(
                  point == ConsumerFaults.Point.AFTER_COMMIT ? "after commit, before XACK" : "before commit");
            }
          }
        });
        c.start();
        all.add(c);
        return c;
      };
    }

    @Override
    RelayBuilder relay(RelayBuilder builder) {
      return builder.maintenanceInterval(Duration.ofMillis(200)).listener(new RelayListener() {
        @Override
        public void trimmed(ShardId shard, String minId, long evicted) {
          trimmed.addAndGet(evicted);
        }
      });
    }

    @Override
    Payment payment(int i) {
      return new Payment("pay-" + i, "acct-" + (i % 50), 100 + i, i % poisonEvery == 0);
    }

    @Override
    void start() {
      for (int slot = 0; slot < running.length; slot++) {
        running[slot] = startConsumer.apply(slot);
      }
    }

    @Override
    void replaceDead() {
      for (int slot = 0; slot < running.length; slot++) {
        if (dead[slot]) {
          running[slot].close(Duration.ofSeconds(5));
          dead[slot] = false;
          running[slot] = startConsumer.apply(slot);
        }
      }
    }

    @Override
    boolean drained() {
      return running[0].consumer().status().drained();
    }

    @Override
    LedgerConsumer live() {
      return running[0];
    }

    /**
     * A replay through the group: it is set back to the start of every stream, so every entry the streams still hold
     * is delivered again. Once the group is at 0-0 nothing can be trimmed until it moves on, so what the streams hold
     * right after the rewind is exactly what the replay must deliver.
     */
    @Override
    void replayRetained() {
      long duplicatesBefore = total(ConsumerCounters::duplicates);
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        env.redis().xgroupSetID(streamKey(shard), LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
      }
      long retained = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        retained += env.redis().xlen(streamKey(shard));
      }
      long expected = retained;
      try {
        await("the replay of the retained entries skipped as duplicates (" + this + ")")
            .dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .pollInSameThread().until(() -> {
              replaceDead();
              return total(ConsumerCounters::duplicates) - duplicatesBefore >= expected
                  && running[0].consumer().status().drained();
            });
      } catch (ConditionTimeoutException e) {
        throw new AssertionError(e.getMessage() + "; duplicates in the replay "
            + (total(ConsumerCounters::duplicates) - duplicatesBefore) + " of " + retained + " retained, status "
            + running[0].consumer().status(), e);
      }
      System.out.println("LedgerEndToEndTest: retained after the rewind " + retained + ", trimmed " + trimmed.get());
    }

    @Override
    void assertTransport() {
      assertThat(kills.get()).as("consumer threads killed (%s)", this).isPositive();
      // no entry was added twice, and every payment's entry is either still in a stream or was trimmed
      Set<String> ids = new HashSet<>();
      long entries = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        for (StreamEntry e : env.redis().xrange(streamKey(shard), "-", "+", 100_000)) {
          ids.add(e.getFields().get(StreamFormat.MESSAGE_ID));
          entries++;
        }
      }
      assertThat(entries).as("stream entries").isEqualTo(ids.size());
      assertThat(ids.size() + trimmed.get()).as("stream entries retained + trimmed").isEqualTo(payments);
    }

    private String streamKey(int shard) {
      return StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
    }

    @Override
    public String toString() {
      return "seed " + seed + ", kills " + kills.get();
    }
  }

  /** Lists: consumer a dies as a process right after a commit, before its LREM, and restarts under its name. */
  private final class KillBeforeLremOnLists extends Faults {

    private final AtomicBoolean killing = new AtomicBoolean();
    private final AtomicBoolean killed = new AtomicBoolean();
    /** Read at the kill itself: from then on the reaper of consumer b may return these elements at any time. */
    private final AtomicLong heldAtKill = new AtomicLong();
    private final AtomicLong mostHeld = new AtomicLong();
    private final AtomicLong mostBacklog = new AtomicLong();
    private final AtomicBoolean sampling = new AtomicBoolean(true);
    private final Thread sampler = new Thread(this::sample, "sampler");
    private KillSwitch aProcess;
    private LedgerConsumer a;
    private LedgerConsumer restarted;

    KillBeforeLremOnLists() {
      super(3_000, 1_000, 100, Duration.ofSeconds(40));
    }

    @Override
    RelayBuilder relay(RelayBuilder builder) {
      return builder.listTransport(LIST_CAPACITY).idlePollInterval(Duration.ofMillis(50));
    }

    @Override
    Payment payment(int i) {
      return new Payment(String.format("lp-%05d", i), "acct-" + (i % 50), 100 + i, i % poisonEvery == 0);
    }

    @Override
    void start() {
      // Once a third of the payments are handled by either consumer (not by a alone, which may get less than its
      // half of them), a dies at its next commit.
      aProcess = ConsumerTestKit.killSwitch(point -> {
        if (point == ConsumerFaults.Point.AFTER_COMMIT && total(ConsumerCounters::handled) >= payments / 3
            && killing.compareAndSet(false, true)) {
          heldAtKill.set(heldBy("a-0") + heldBy("a-1"));
          killed.set(true);
          throw new SimulatedCrash("after commit, before LREM");
        }
      });
      a = listConsumer("a", aProcess);
      LedgerConsumer b = listConsumer("b", ConsumerFaults.NONE);
      a.start();
      b.start();
      sampler.start();
    }

    /** Consumer a dies after a commit, before its LREM, and restarts under its name. */
    @Override
    void afterPayments() {
      await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(30)).until(killed::get);
      aProcess.kill(); // the process dies: no heartbeats, its lists stay as they are
      a.close(Duration.ofSeconds(1));
      restarted = listConsumer("a", ConsumerFaults.NONE);
      restarted.start();
    }

    @Override
    boolean drained() {
      return listStatus().drained();
    }

    @Override
    LedgerConsumer live() {
      return restarted;
    }

    @Override
    void assertTransport() {
      stop();
      assertThat(heldAtKill.get()).as("the killed process left its committed batch in its processing list")
          .isPositive();
      long duplicates = total(ConsumerCounters::duplicates);
      assertThat(duplicates).as("the returned batch met its inbox markers").isGreaterThanOrEqualTo(1);
      long pushed = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        pushed += Long.parseLong(env.redis().hget(ListFormat.relayKey(list(shard)), "added"));
      }
      assertThat(pushed).as("nothing pushed twice").isEqualTo(payments);
      assertThat(mostHeld.get()).as("waiting + in processing per shard").isLessThanOrEqualTo(LIST_CAPACITY);
      assertThat(mostBacklog.get()).as("the outbox held the backlog at the capacity").isPositive();
      ListStatus status = listStatus();
      assertThat(status.waiting()).isZero();
      assertThat(status.inProcessing()).isZero();
      assertThat(status.outboxBacklog()).isZero();
      assertThat(status.deadLetters()).isEqualTo(payments / poisonEvery);
      assertThat(status.shards()).allSatisfy(s -> assertThat(s.capacity()).isEqualTo(LIST_CAPACITY));
    }

    @Override
    void stop() {
      sampling.set(false);
      try {
        sampler.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    private void sample() {
      while (sampling.get()) {
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          long held = (Long) env.redis().eval(HELD, 2, ListFormat.consumersKey(list(shard)), list(shard));
          mostHeld.accumulateAndGet(held, Math::max);
        }
        mostBacklog.accumulateAndGet(count("SELECT count(*) FROM outbox WHERE published_at IS NULL"), Math::max);
      }
    }

    private LedgerConsumer listConsumer(String name, ConsumerFaults faults) {
      LedgerConsumer c = listLedger(name, faults);
      all.add(c);
      return c;
    }

    private ListStatus listStatus() {
      try (ListConsumer probe = ListConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
          .keyPrefix(env.keyPrefix()).topic(PaymentEvents.TOPIC_CONFIG).group("ledger")
          .batchHandler((tx, messages) -> {
            throw new IllegalStateException("a probe never handles messages");
          }).build()) {
        return probe.status(); // never started: no heartbeat, no registration, nothing taken
      }
    }

    private long heldBy(String worker) {
      long n = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        n += env.redis().llen(ListFormat.processingKey(list(shard), worker));
      }
      return n;
    }

    private String list(int shard) {
      return ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
    }

    @Override
    public String toString() {
      return "killed " + killed.get() + ", held at the kill " + heldAtKill.get();
    }
  }

  /** A ledger consumer on the streams, with short timeouts, a worker and three deliveries. */
  private LedgerConsumer streamLedger(String name, ConsumerFaults faults) {
    return LedgerConsumer.of(StreamConsumer.builder(env.dataSource(), env.redisSpec()).faults(faults)
        .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(PaymentEvents.TOPIC_CONFIG)
        .group(LedgerConsumer.DEFAULT_GROUP).consumerName(name).batchSize(50).block(Duration.ofMillis(100))
        .minIdle(Duration.ofSeconds(1)).reclaimInterval(Duration.ofMillis(100)).workers(1).maxDeliveries(3)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200)), env.dataSource(), false, null);
  }

  /** A ledger consumer on the lists, with short timeouts, two workers and two deliveries. */
  private LedgerConsumer listLedger(String name, ConsumerFaults faults) {
    return LedgerConsumer.of(ListConsumer.builder(env.dataSource(), env.redisSpec()).faults(faults)
        .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(PaymentEvents.TOPIC_CONFIG)
        .group(LedgerConsumer.DEFAULT_GROUP).consumerName(name).batchSize(50).block(Duration.ofMillis(100))
        .heartbeatTtl(Duration.ofSeconds(1)).reapInterval(Duration.ofMillis(100)).workers(2).maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)), env.dataSource(), false, null);
  }

  /** A counter summed over every consumer the test started. */
  private long total(ToLongFunction<ConsumerCounters> counter) {
    List<LedgerConsumer> copy;
    synchronized (all) {
      copy = List.copyOf(all);
    }
    return copy.stream().map(LedgerConsumer::counters).mapToLong(counter).sum();
  }

  private long charges() {
    return count("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
  }

  private long count(String sql) {
    return env.queryLong(sql);
  }
}
