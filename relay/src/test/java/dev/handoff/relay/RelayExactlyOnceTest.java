package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@HandoffTest
class RelayExactlyOnceTest {

  static {
    // The crash tests kill relay threads on purpose.
    org.awaitility.Awaitility.doNotCatchUncaughtExceptionsByDefault();
  }

  private final TestEnvironment env;

  RelayExactlyOnceTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    env.redis().del(key("payments", 0), key("payments", 0) + ":relay", key("orders", 0), key("orders", 0) + ":relay");
    for (int shard = 0; shard < 3; shard++) {
      env.redis().del(key("ledgers", shard), key("ledgers", shard) + ":relay");
    }
  }

  @Test
  void tenThousandRowsFromFourProducersAppearExactlyOnceInIdOrder() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    Set<UUID> committed = ConcurrentHashMap.newKeySet();
    Set<UUID> rolledBack = ConcurrentHashMap.newKeySet();
    try (Relay relay = relay("payments").build()) {
      relay.start();
      ExecutorService producers = Executors.newFixedThreadPool(4);
      List<Future<?>> done = new ArrayList<>();
      for (int p = 0; p < 4; p++) {
        int producer = p;
        done.add(producers.submit(() -> {
          for (int i = 0; i < 2_500; ) {
            try (Connection tx = env.dataSource().getConnection()) {
              tx.setAutoCommit(false);
              int n = Math.min(1 + (i % 7), 2_500 - i);
              List<UUID> ids = new ArrayList<>();
              for (int k = 0; k < n; k++) {
                ids.add(outbox.append(tx, Message.builder("payments", "payment.created")
                    .key("p" + producer + "-" + (i + k)).payload("x").build()).messageId());
              }
              // Every fifth transaction also appends a row and rolls back: it must never reach the stream.
              if (i % 5 == 0) {
                try (Connection other = env.dataSource().getConnection()) {
                  other.setAutoCommit(false);
                  rolledBack.add(outbox.append(other, Message.builder("payments", "payment.created").build())
                      .messageId());
                  other.rollback();
                }
              }
              tx.commit();
              committed.addAll(ids);
              i += n;
            }
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
      producers.shutdown();

      await().atMost(Duration.ofSeconds(60)).until(() -> env.redis().xlen(key("payments", 0)) >= 10_000
          && env.queryLong("select count(*) from outbox where published_at is null") == 0);
    }

    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key("payments", 0));
    assertThat(committed).hasSize(10_000);
    assertThat(entries).hasSize(10_000);
    Set<UUID> streamed = new HashSet<>();
    entries.forEach(e -> streamed.add(e.message().messageId()));
    assertThat(streamed).isEqualTo(committed);
    assertThat(streamed).doesNotContainAnyElementsOf(rolledBack);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    assertThat(env.queryLong("select count(*) from outbox where published_at is not null")).isEqualTo(10_000);
  }

  @Test
  void aCrashAfterSeveralShardsWereWrittenAndBeforeAnyWasMarkedIsRepairedWithoutDuplicates() throws Exception {
    // A cycle writes every shard's batch first and marks them after the last write: crash between the two.
    TopicConfig topic = TopicConfig.of("ledgers").withShards(3);
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(topic).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < 600; i++) {
        batch.add(Message.builder("ledgers", "entry.posted").key("account-" + i).payload("entry-" + i).build());
      }
      outbox.appendAll(tx, batch);
      tx.commit();
    }
    java.util.concurrent.atomic.AtomicInteger written = new java.util.concurrent.atomic.AtomicInteger();
    Relay crashing = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
        .keyPrefix(env.keyPrefix()).topic(topic).leaseTtl(Duration.ofMillis(600)).faults(new RelayFaults() {
          @Override
          public void afterStreamWrite(ShardId shard, int rows) {
            if (written.incrementAndGet() == 3) {
              throw new SimulatedCrash("after the third shard's XADD");
            }
          }
        }).build();
    crashing.start();
    await().atMost(Duration.ofSeconds(20)).until(() -> written.get() == 3);
    long inStreams = 0;
    for (int shard = 0; shard < 3; shard++) {
      long length = env.redis().xlen(key("ledgers", shard));
      assertThat(length).as("shard %d was written", shard).isPositive();
      assertThat(env.queryLong("select cardinality(batch_ids) from relay_lease where topic = 'ledgers' and shard = ?",
          shard)).as("shard %d's batch is still pending", shard).isEqualTo(length);
      inStreams += length;
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is not null")).isZero();

    long resent = RelayTestSupport.relayUntilPublished(env, Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(topic).leaseTtl(Duration.ofMillis(600)));
    assertThat(resent).as("every crashed batch was re-sent and found in its stream").isEqualTo(inStreams);
    long total = 0;
    for (int shard = 0; shard < 3; shard++) {
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key("ledgers", shard));
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(entries.size());
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
      total += entries.size();
    }
    assertThat(total).isEqualTo(600);
    crashing.close(Duration.ofMillis(100));
  }

  @Test
  void onlyOneRelayOwnsAShardAndAPausedFormerOwnerCannotDuplicateOrLose() throws Exception {
    Duration ttl = Duration.ofMillis(800);
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    AtomicBoolean pauseNextWrite = new AtomicBoolean();
    Relay first = relay("orders").owner("relay-a").leaseTtl(ttl).faults(new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (pauseNextWrite.compareAndSet(true, false)) {
          paused.countDown();
          try {
            resume.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    }).build();
    // The successor's lease outlasts any stall of this test: the former owner must never get the shard back.
    Relay second = relay("orders").owner("relay-b").leaseTtl(Duration.ofSeconds(60)).build();

    appendRows("orders", 50);
    assertThat(first.relayOnce().published()).isEqualTo(50);
    assertThat(second.relayOnce().ownedShards()).isZero();
    assertThat(first.ownedShards()).containsExactly(new ShardId("orders", 0));
    assertThat(second.ownedShards()).isEmpty();
    assertThat(env.queryLong("select epoch from relay_lease where topic = 'orders'")).isEqualTo(1);

    // The owner assigns IDs to the next batch, then pauses before writing it to Redis.
    appendRows("orders", 40);
    pauseNextWrite.set(true);
    ExecutorService pausedThread = Executors.newSingleThreadExecutor();
    Future<?> firstPass = pausedThread.submit(first::relayOnce);
    assertThat(paused.await(10, TimeUnit.SECONDS)).isTrue();

    // Its lease runs out; the other relay takes over and publishes the assigned batch itself.
    appendRows("orders", 30);
    await().atMost(Duration.ofSeconds(30)).until(() -> second.relayOnce().ownedShards() == 1);
    assertThat(env.queryLong("select epoch from relay_lease where topic = 'orders'")).isEqualTo(2);
    assertThat(owner()).isEqualTo("relay-b");
    second.relayOnce();
    assertThat(env.redis().xlen(key("orders", 0))).isEqualTo(120);

    // The former owner wakes up and writes its stale batch: nothing is added twice and it stops writing.
    resume.countDown();
    firstPass.get(10, TimeUnit.SECONDS);
    appendRows("orders", 10);
    first.relayOnce();
    assertThat(first.ownedShards()).isEmpty();
    second.relayOnce();

    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key("orders", 0));
    assertThat(entries).hasSize(130);
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(130);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
    pausedThread.shutdownNow();
    first.close();
    second.close();
  }

  @Test
  void killedOwnersShardIsTakenOverWithinTheTtl() throws Exception {
    Duration ttl = Duration.ofMillis(1000);
    // Every change of the lease row, stamped with the database's clock (the one leases run on): the takeover is
    // judged against the lease's own expiry, not against how soon the standby's thread happened to look.
    String history = env.schema() + ".lease_history";
    env.execute("CREATE TABLE " + history + " (owner text, epoch bigint, expires_at timestamptz,"
            + " changed_at timestamptz NOT NULL DEFAULT clock_timestamp())",
        "CREATE FUNCTION " + env.schema() + ".record_lease() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " INSERT INTO " + history + " (owner, epoch, expires_at) VALUES (NEW.owner, NEW.epoch, NEW.expires_at);"
            + " RETURN NEW; END $$",
        "CREATE TRIGGER record_lease AFTER UPDATE ON " + env.schema() + ".relay_lease FOR EACH ROW"
            + " EXECUTE FUNCTION " + env.schema() + ".record_lease()");
    AtomicBoolean dead = new AtomicBoolean();
    Relay owner = relay("orders").owner("relay-a").leaseTtl(ttl).faults(new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (dead.get()) {
          throw new SimulatedCrash("before the XADD");
        }
      }
    }).build();
    try {
      owner.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> owner.ownedShards().size() == 1);
      try (Relay standby = relay("orders").owner("relay-b").leaseTtl(ttl).idlePollInterval(Duration.ofMillis(50))
          .build()) {
        standby.start();
        appendRows("orders", 20);
        await().atMost(Duration.ofSeconds(10)).until(() -> env.redis().xlen(key("orders", 0)) == 20);
        assertThat(standby.ownedShards()).isEmpty();

        dead.set(true);
        appendRows("orders", 20);
        await().atMost(Duration.ofSeconds(10)).until(() -> env.redis().xlen(key("orders", 0)) == 40);
        assertThat(standby.ownedShards()).containsExactly(new ShardId("orders", 0));
      }
      // The dead owner's last renewal made its lease run out one TTL later; the standby took it (epoch 2) only
      // after that, and it is the only change of owner.
      assertThat(env.queryLong("SELECT count(DISTINCT (owner, epoch)) FROM " + history + " WHERE owner IS NOT NULL"))
          .isEqualTo(2);
      assertThat(env.queryLong("SELECT count(*) FROM " + history + " WHERE owner = 'relay-a' AND epoch <> 1"))
          .isZero();
      assertThat(env.queryLong("SELECT min(epoch) FROM " + history + " WHERE owner = 'relay-b'")).isEqualTo(2);
      long leaseLeftMicros = env.queryLong("SELECT (extract(epoch FROM expires_at - changed_at) * 1000000)::bigint"
          + " FROM " + history + " WHERE owner = 'relay-a' ORDER BY changed_at DESC LIMIT 1");
      assertThat(leaseLeftMicros).as("the dead owner's lease after its last renewal, in microseconds")
          .isPositive().isLessThanOrEqualTo(ttl.toNanos() / 1000);
      assertThat(env.queryLong("SELECT count(*) FROM " + history + " b WHERE b.owner = 'relay-b'"
          + " AND b.changed_at <= (SELECT max(a.expires_at) FROM " + history + " a WHERE a.owner = 'relay-a')"))
          .as("changes by the standby before the dead owner's lease expired").isZero();
    } finally {
      env.execute("DROP TRIGGER record_lease ON " + env.schema() + ".relay_lease",
          "DROP FUNCTION " + env.schema() + ".record_lease()", "DROP TABLE " + history);
    }
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key("orders", 0));
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(40);
    owner.close(Duration.ofMillis(100));
  }

  private String owner() {
    try (Connection c = env.dataSource().getConnection();
        var ps = c.prepareStatement("select owner from relay_lease where topic = 'orders'");
        var rs = ps.executeQuery()) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aKeysTransactionsReachTheStreamInCommitOrderEvenWhenTheFirstCommitsLateDuringABacklog() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    // The key's first transaction takes the lowest id and stays open while a backlog of other rows commits.
    Connection first = env.dataSource().getConnection();
    first.setAutoCommit(false);
    UUID one = outbox.append(first, Message.builder("orders", "order.placed").key("K").payload("1").build())
        .messageId();
    appendRows("orders", 30);
    AtomicBoolean committedLate = new AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<UUID> two = new java.util.concurrent.atomic.AtomicReference<>();
    Relay relay = relay("orders").batchSize(10, 10).faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        if (committedLate.compareAndSet(false, true)) {
          // After the relay wrote a full batch of higher ids: the first transaction commits, then the key's
          // second transaction (serialized after it, as the guarantee requires) appends and commits.
          try (Connection second = env.dataSource().getConnection()) {
            first.commit();
            first.close();
            second.setAutoCommit(false);
            two.set(outbox.append(second, Message.builder("orders", "order.placed").key("K").payload("2").build())
                .messageId());
            second.commit();
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        }
      }
    }).build();
    try (relay) {
      relay.relayOnce();
      relay.relayOnce();
    }

    List<UUID> keyOrder = new ArrayList<>();
    for (RelayTestSupport.Entry e : RelayTestSupport.entries(env.redis(), key("orders", 0))) {
      if ("K".equals(e.message().key())) {
        keyOrder.add(e.message().messageId());
      }
    }
    assertThat(keyOrder).containsExactly(one, two.get());
  }

  private RelayBuilder relay(String topic) {
    return RelayTestSupport.relay(env, topic);
  }

  private void appendRows(String topic, int n) throws SQLException {
    RelayTestSupport.appendKeyed(env, topic, n);
  }

  private String key(String topic, int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), topic, shard);
  }
}
