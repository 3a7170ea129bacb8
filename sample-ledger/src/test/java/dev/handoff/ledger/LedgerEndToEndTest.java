package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.consumer.testkit.ConsumerTestKit;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.RelayListener;
import dev.handoff.outbox.ShardId;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.testkit.SimulatedCrash;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The whole chain in one JVM: 10,000 payments through the payment service, a relay, and three ledger consumers whose
 * worker threads are killed at random (before or after their batch commits), then a replay of what the streams
 * retain through the group and a full replay from the outbox: every payment that is not poison is charged exactly
 * once. The relay trims the streams as it likes meanwhile (a short maintenance interval); every count below holds
 * whatever it trimmed, because the test counts what it evicted and replays the full history from the outbox.
 */
@HandoffTest
class LedgerEndToEndTest {

  private static final int PAYMENTS = 10_000;
  private static final int POISON_EVERY = 2_500;
  private static final int POISON = PAYMENTS / POISON_EVERY;
  private static final int MAX_KILLS = 8;

  private final TestEnvironment env;

  LedgerEndToEndTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void tenThousandPaymentsWithConsumerThreadsKilledAtRandomAndAFullReplayAreChargedExactlyOnce() {
    // given
    long seed = System.nanoTime();
    Random random = new Random(seed);
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());
    AtomicLong trimmed = new AtomicLong();
    Relay relay = Relay.builder(env.dataSource(), env.redis())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .maintenanceInterval(Duration.ofMillis(200))
        .listener(new RelayListener() {
          @Override
          public void trimmed(ShardId shard, String minId, long evicted) {
            trimmed.addAndGet(evicted);
          }
        })
        .build();
    AtomicInteger kills = new AtomicInteger();
    List<LedgerConsumer> all = java.util.Collections.synchronizedList(new ArrayList<>());
    LedgerConsumer[] running = new LedgerConsumer[3];
    boolean[] dead = new boolean[3];
    int[] generation = {0};

    java.util.function.IntFunction<LedgerConsumer> startConsumer = slot -> {
      LedgerConsumer c = consumer("c" + slot + "-" + generation[0]++, point -> {
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

    try {
      relay.start();
      for (int slot = 0; slot < running.length; slot++) {
        running[slot] = startConsumer.apply(slot);
      }

      // when: payments arrive in batches while consumers die and are replaced
      List<Payment> batch = new ArrayList<>();
      for (int i = 1; i <= PAYMENTS; i++) {
        batch.add(new Payment("pay-" + i, "acct-" + (i % 50), 100 + i, i % POISON_EVERY == 0));
        if (batch.size() == 250) {
          assertThat(payments.payAll(batch)).isEqualTo(250);
          batch.clear();
          replaceDead(running, dead, startConsumer);
        }
      }
      await("every payment charged or dead-lettered (seed " + seed + ")").dontCatchUncaughtExceptions()
          .atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100)).pollInSameThread().until(() -> {
        replaceDead(running, dead, startConsumer);
        return count("SELECT count(*) FROM charge WHERE ledger = 'ledger'") == PAYMENTS - POISON
            && count("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == POISON
            && running[0].consumer().status().drained();
      });

      // and a replay through the group: it is set back to the start of every stream, so every entry the streams
      // still hold is delivered again. Once the group is at 0-0 nothing can be trimmed until it moves on, so what
      // the streams hold right after the rewind is exactly what the replay must deliver.
      long duplicatesBefore = duplicates(all);
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        env.redis().xgroupSetID(streamKey(shard), LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
      }
      long retained = retainedEntries();
      try {
        await("the replay of the retained entries skipped as duplicates (seed " + seed + ")")
            .dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .pollInSameThread().until(() -> {
              replaceDead(running, dead, startConsumer);
              return duplicates(all) - duplicatesBefore >= retained && running[0].consumer().status().drained();
            });
      } catch (ConditionTimeoutException e) {
        throw new AssertionError(e.getMessage() + "; duplicates in the replay " + (duplicates(all) - duplicatesBefore)
            + " of " + retained + " retained, kills " + kills.get() + ", status " + running[0].consumer().status(),
            e);
      }
      // and a full replay of the history from the outbox, which holds every row whatever the streams were trimmed to
      ReplayResult replay = ConsumerTestKit.assertReplayChangesNothing(running[0].consumer(), OutboxRange.all());
      System.out.println("LedgerEndToEndTest: retained after the rewind " + retained + ", trimmed " + trimmed.get());
      relay.close(); // no trim from here on, so that the streams and the trimmed count are read at one point

      // then
      assertThat(kills.get()).as("consumer threads killed (seed %d)", seed).isPositive();
      assertThat(replay.offered()).isEqualTo(PAYMENTS);
      assertThat(replay.duplicates()).isEqualTo(PAYMENTS);
      assertThat(count("SELECT count(*) FROM payment")).isEqualTo(PAYMENTS);
      assertThat(count("SELECT count(*) FROM outbox")).isEqualTo(PAYMENTS);
      assertThat(count("SELECT count(*) FROM charge WHERE ledger = 'ledger'")).isEqualTo(PAYMENTS - POISON);
      assertThat(count("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'ledger'"))
          .isEqualTo(PAYMENTS - POISON);
      assertThat(count("SELECT count(*) FROM charge c JOIN payment p USING (payment_id) WHERE p.poison")).isZero();
      assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'processed'"))
          .isEqualTo(PAYMENTS - POISON);
      assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'dead'"))
          .isEqualTo(POISON);
      // no entry was added twice, and every payment's entry is either still in a stream or was trimmed
      assertThat(streamMessages().size() + trimmed.get()).as("stream entries retained + trimmed").isEqualTo(PAYMENTS);
      LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), LedgerConsumer.DEFAULT_GROUP);
      assertThat(audit.passed()).as("audit %s (seed %d)", audit, seed).isTrue();
      assertThat(audit.payments()).isEqualTo(PAYMENTS);
      assertThat(audit.poison()).isEqualTo(POISON);
      assertThat(audit.charges()).isEqualTo(PAYMENTS - POISON);
      assertThat(audit.missing()).isZero();
      assertThat(audit.duplicated()).isZero();
      assertThat(audit.orphans()).isZero();
      assertThat(audit.deadLetters()).isEqualTo(POISON);
    } finally {
      synchronized (all) {
        for (LedgerConsumer c : all) {
          c.close(Duration.ofSeconds(5));
        }
      }
      relay.close();
    }
  }

  private static void replaceDead(LedgerConsumer[] running, boolean[] dead,
      java.util.function.IntFunction<LedgerConsumer> start) {
    for (int slot = 0; slot < running.length; slot++) {
      if (dead[slot]) {
        running[slot].close(Duration.ofSeconds(5));
        dead[slot] = false;
        running[slot] = start.apply(slot);
      }
    }
  }

  private LedgerConsumer consumer(String name, ConsumerFaults faults) {
    return LedgerConsumer.builder(env.dataSource(), HostAndPort.from(env.redisUri().getAuthority()))
        .faults(faults)
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .consumerName(name)
        .workers(1)
        .batchSize(50)
        .block(Duration.ofMillis(100))
        .minIdle(Duration.ofSeconds(1))
        .reclaimInterval(Duration.ofMillis(100))
        .maxDeliveries(3)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .persistStats(false)
        .build();
  }

  private static long duplicates(List<LedgerConsumer> consumers) {
    long sum = 0;
    List<LedgerConsumer> copy;
    synchronized (consumers) {
      copy = List.copyOf(consumers);
    }
    for (LedgerConsumer c : copy) {
      sum += c.counters().duplicates();
    }
    return sum;
  }

  private String streamKey(int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
  }

  private long retainedEntries() {
    long n = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      n += env.redis().xlen(streamKey(shard));
    }
    return n;
  }

  private Set<String> streamMessages() {
    Set<String> ids = new HashSet<>();
    long entries = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      for (StreamEntry e : env.redis().xrange(streamKey(shard), "-", "+", 100_000)) {
        ids.add(e.getFields().get(StreamFormat.MESSAGE_ID));
        entries++;
      }
    }
    assertThat(entries).as("stream entries").isEqualTo(ids.size());
    return ids;
  }

  private long count(String sql) {
    return env.queryLong(sql);
  }
}
