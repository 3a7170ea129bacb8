package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A started relay renews its leases on a thread of its own: a cycle that takes longer than the lease TTL keeps its
 * shard, while a relay whose thread died or is stuck lets its leases expire for another relay to take. Each test
 * blocks the relay's thread for real inside a cycle (a fault hook waiting on a latch) and watches the lease row.
 */
@HandoffTest
class LeaseRenewalTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  private static final String TOPIC = "renewed";

  private final TestEnvironment env;

  LeaseRenewalTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    String key = StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0);
    env.redis().del(key, StreamFormat.relayKey(key));
  }

  @Test
  void aCycleLongerThanTheLeaseTtlKeepsItsLeaseSoNoOtherRelayTakesTheShardMeanwhile() throws Exception {
    CountDownLatch inCycle = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    RelayTestSupport.append(env, TOPIC, 20);
    Relay slow = relay("relay-slow").faults(blockBeforeTheFirstWrite(inCycle, release)).build();
    try (Relay other = relay("relay-other").build()) {
      slow.start();
      assertThat(inCycle.await(30, TimeUnit.SECONDS)).as("the slow relay reached its write").isTrue();
      long epoch = env.queryLong("select epoch from relay_lease where topic = ? and owner = 'relay-slow'", TOPIC);
      long cycleBegan = databaseMillis();

      // A whole TTL after the cycle began, the lease still runs for more than half a TTL: it was renewed while the
      // relay's thread was held inside the cycle.
      await().atMost(Duration.ofSeconds(30)).until(() -> databaseMillis() > cycleBegan + TTL.toMillis()
          && leaseLeftMillis("relay-slow") > TTL.toMillis() / 2);
      other.relayOnce();

      assertThat(other.ownedShards()).as("the other relay took nothing from a live owner").isEmpty();
      release.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> env.queryLong(
          "select count(*) from outbox where topic = ? and published_at is null", TOPIC) == 0);
      assertThat(env.queryLong("select epoch from relay_lease where topic = ?", TOPIC))
          .as("never taken over, so never fenced").isEqualTo(epoch);
    } finally {
      release.countDown();
      slow.close(Duration.ofSeconds(10));
    }
    List<RelayTestSupport.Entry> entries =
        RelayTestSupport.entries(env.redis(), StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0));
    assertThat(entries).hasSize(20);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
  }

  @Test
  void aRelayThreadThatDiedRenewsNothingSoAnotherRelayTakesItsShardAfterTheTtl() throws Exception {
    RelayTestSupport.append(env, TOPIC, 10);
    Relay crashed = relay("relay-crashed").faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        throw new SimulatedCrash("after the XADD, before the mark");
      }
    }).build();
    try (Relay successor = relay("relay-successor").build()) {
      crashed.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> !threadAlive("handoff-relay-relay-crashed"));
      long epoch = env.queryLong("select epoch from relay_lease where topic = ?", TOPIC);

      await().atMost(Duration.ofSeconds(30)).until(() -> {
        successor.relayOnce();
        return successor.ownedShards().equals(Set.of(new ShardId(TOPIC, 0)));
      });

      assertThat(env.queryLong("select epoch from relay_lease where topic = ?", TOPIC)).isEqualTo(epoch + 1);
      assertThat(env.queryLong("select count(*) from outbox where topic = ? and published_at is null", TOPIC))
          .isZero();
    } finally {
      crashed.close(Duration.ofSeconds(1));
    }
    List<RelayTestSupport.Entry> entries =
        RelayTestSupport.entries(env.redis(), StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0));
    assertThat(entries).as("the crashed batch's entries were not added twice").hasSize(10);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
  }

  @Test
  void aRelayThreadStuckForTwoTtlsStopsRenewingSoAnotherRelayTakesItsShard() throws Exception {
    CountDownLatch inCycle = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    RelayTestSupport.append(env, TOPIC, 10);
    Relay stuck = relay("relay-stuck").faults(blockBeforeTheFirstWrite(inCycle, release)).build();
    try (Relay successor = relay("relay-successor").build()) {
      stuck.start();
      assertThat(inCycle.await(30, TimeUnit.SECONDS)).isTrue();
      long epoch = env.queryLong("select epoch from relay_lease where topic = ?", TOPIC);

      await().atMost(Duration.ofSeconds(60)).until(() -> {
        successor.relayOnce();
        return !successor.ownedShards().isEmpty();
      });

      assertThat(env.queryLong("select epoch from relay_lease where topic = ?", TOPIC)).isEqualTo(epoch + 1);
      assertThat(threadAlive("handoff-relay-relay-stuck")).as("taken over while its thread was still alive")
          .isTrue();
      release.countDown();
      // The stuck relay wakes up fenced: whatever it writes now is refused by the epoch, and the successor's
      // entries are the only ones.
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        successor.relayOnce();
        return env.queryLong("select count(*) from outbox where topic = ? and published_at is null", TOPIC) == 0;
      });
    } finally {
      release.countDown();
      stuck.close(Duration.ofSeconds(5));
    }
    List<RelayTestSupport.Entry> entries =
        RelayTestSupport.entries(env.redis(), StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0));
    assertThat(entries).hasSize(10);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
  }

  @Test
  void aRelayRestartedUnderTheSameNameRenewsOnlyTheLeasesItTookSoTheRestGoToAnotherRelay() throws Exception {
    TopicConfig topic = TopicConfig.of("renamed").withShards(4);
    Relay before = relay("relay-fixed", topic).build();
    before.relayOnce(); // holds all four, then its process is gone without giving them back
    assertThat(before.ownedShards()).hasSize(4);
    try (Relay other = relay("relay-other", topic).build();
        Relay restarted = relay("relay-fixed", topic).build()) {
      other.relayOnce(); // alive, but every lease is still held
      assertThat(other.ownedShards()).isEmpty();

      restarted.relayOnce(); // two relays alive: it takes its fair share, two of the four rows that name it

      assertThat(restarted.ownedShards()).hasSize(2);
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        restarted.relayOnce(); // renews what it holds, and only that
        other.relayOnce();
        return other.ownedShards().size() == 2;
      });
      assertThat(restarted.ownedShards()).hasSize(2).doesNotContainAnyElementsOf(other.ownedShards());
      assertThat(env.queryLong("select count(*) from relay_lease where topic = 'renamed' and owner = 'relay-other'"
          + " and epoch = 2")).as("taken over, so fenced with a new epoch").isEqualTo(2);
    }
  }

  @Test
  void anErrorThrownInsideARenewalEndsThatRenewalOnlyAndTheNextOnesStillRenewTheLease() throws Exception {
    // The real fault: the connection source throws an Error once, on the lease thread only, as a broken driver or
    // an agent can. A periodic task that let it escape would be cancelled for good, silently.
    AtomicInteger leaseThreadBorrows = new AtomicInteger();
    AtomicInteger borrowsAtTheError = new AtomicInteger(-1);
    DataSource failingOnce = erroringOnceOnTheLeaseThread(env.dataSource(), leaseThreadBorrows, borrowsAtTheError);
    try (LogCapture logs = LogCapture.start();
        Relay relay = Relay.builder(failingOnce, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic(TopicConfig.of(TOPIC)).owner("relay-error").leaseTtl(TTL)
            .idlePollInterval(Duration.ofMillis(50)).build()) {
      relay.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> borrowsAtTheError.get() >= 0);
      long epoch = env.queryLong("select epoch from relay_lease where topic = ? and owner = 'relay-error'", TOPIC);

      await().atMost(Duration.ofSeconds(30)).until(() -> leaseThreadBorrows.get() >= borrowsAtTheError.get() + 2);

      assertThat(leaseLeftMillis("relay-error")).as("renewed after the error").isPositive();
      assertThat(env.queryLong("select epoch from relay_lease where topic = ?", TOPIC)).isEqualTo(epoch);
      assertThat(logs.warnings()).anyMatch(l -> l.startsWith("ERROR ") && l.contains("lease renewal failed")
          && l.contains("simulated linkage failure"));
    }
  }

  private RelayBuilder relay(String owner) {
    return relay(owner, TopicConfig.of(TOPIC));
  }

  private RelayBuilder relay(String owner, TopicConfig topic) {
    return Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(topic).owner(owner).leaseTtl(TTL).idlePollInterval(Duration.ofMillis(50));
  }

  /** Holds the relay's thread inside its first cycle, after the batch was assigned and before Redis hears of it. */
  private static RelayFaults blockBeforeTheFirstWrite(CountDownLatch inCycle, CountDownLatch release) {
    return new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (inCycle.getCount() > 0) {
          inCycle.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
  }

  /** How long the lease of {@code owner} still runs, by the database's clock (negative once expired). */
  private long leaseLeftMillis(String owner) {
    return env.queryLong("select coalesce(floor(extract(epoch from (expires_at - clock_timestamp())) * 1000), -1)"
        + "::bigint from relay_lease where topic = ? and owner = ?", TOPIC, owner);
  }

  private long databaseMillis() {
    return env.queryLong("select floor(extract(epoch from clock_timestamp()) * 1000)::bigint");
  }

  private static boolean threadAlive(String name) {
    return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.isAlive() && t.getName().equals(name));
  }

  /**
   * {@code delegate}, except that the first connection asked for on the relay's lease thread (after the first
   * renewal) throws a {@link LinkageError}; every borrow on that thread is counted.
   */
  private static DataSource erroringOnceOnTheLeaseThread(DataSource delegate, AtomicInteger leaseThreadBorrows,
      AtomicInteger borrowsAtTheError) {
    return (DataSource) Proxy.newProxyInstance(LeaseRenewalTest.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
          if (method.getName().equals("getConnection")
              && Thread.currentThread().getName().startsWith("handoff-relay-lease-")) {
            int n = leaseThreadBorrows.incrementAndGet();
            if (n == 2 && borrowsAtTheError.compareAndSet(-1, n)) {
              throw new LinkageError("simulated linkage failure");
            }
          }
          try {
            return method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}
