package dev.handoff.relay;

import static dev.handoff.relay.RelayTestSupport.appendKeyed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Shards;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The folded mark: a busy relay marks the batch a cycle wrote in the next cycle's transaction, the one that assigns
 * the shard's next batch, so that a busy cycle costs one commit. A crash at any point of that leaves one unconfirmed
 * batch per shard, which the successor sends again with its IDs: no row lost, none added twice, order kept.
 */
@HandoffTest
class RelayFoldedMarkTest {

  static {
    // The crash tests kill a relay thread on purpose.
    org.awaitility.Awaitility.doNotCatchUncaughtExceptionsByDefault();
  }

  private static final String TOPIC = "folded";
  private static final int ROWS = 500;
  private static final int BATCH = 100;

  private final TestEnvironment env;

  RelayFoldedMarkTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    env.redis().del(key(), StreamFormat.relayKey(key()));
  }

  @Test
  void eachBatchIsMarkedInTheTransactionThatAssignsTheNextOne() throws Exception {
    appendKeyed(env, TOPIC, ROWS);
    TransactionRecorder recorder = new TransactionRecorder(env.dataSource());
    RelayCycle cycle = relayOnceThrough(recorder, TopicConfig.of(TOPIC));
    assertThat(cycle.assigned()).isEqualTo(ROWS);
    assertThat(cycle.published()).isEqualTo(ROWS);

    // C = the "which shards have rows" check, A = an assignment, M = a mark; one string per committed transaction
    // that holds any of them.
    List<String> publishing = recorder.committed().stream().map(RelayFoldedMarkTest::shape)
        .filter(s -> !s.isEmpty()).toList();
    // 5 batches, 6 commits (before the fold: 10). Only the first cycle, which has nothing to mark, checks first: a
    // cycle that marks writes anyway, so it asks its shards without the check's round trip. The last transaction
    // marks the fifth batch and asks for a sixth, which finds nothing; the next cycle, with nothing to mark, checks,
    // finds no rows and writes nothing.
    assertThat(publishing).as("each transaction marks the previous batch and assigns the next")
        .containsExactly("CA", "MA", "MA", "MA", "MA", "MA", "C");

    assertThat(RelayTestSupport.unpublished(env)).isZero();
    assertThat(env.queryLong("select count(*) from relay_lease where batch_ids is not null")).isZero();
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key());
    assertThat(entries).hasSize(ROWS);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    RelayTestSupport.assertInOutboxIdOrder(entries);
  }

  /**
   * A cycle that marks the batches of at least half its shards asks all of them without the check: with 2 shards
   * and rows in shard 1 only, shard 0 is asked too, ahead of the marked one (every lease row locked first, in shard
   * order), gets nothing and keeps nothing pending. With 3, one marked batch is less than half, and the check runs
   * first, so that a trickle into one shard of many does not lock every lease row. Either way every row of the busy
   * shard goes out once, in order.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void aMarkingCycleAsksItsIdleShardsOnlyWhenItMarksAtLeastHalfAndTheBusyShardGoesOutWhole(int shards)
      throws Exception {
    String topic = "folded-" + shards;
    int busyShard = shards - 1;
    List<Message> busy = new ArrayList<>();
    for (int i = 0; busy.size() < ROWS; i++) {
      if (Shards.of("k" + i, null, shards) == busyShard) {
        busy.add(Message.builder(topic, "order.placed").key("k" + i).payload("payload-" + i).build());
      }
    }
    TopicConfig config = TopicConfig.of(topic).withShards(shards);
    RelayTestSupport.appendAll(env, Outbox.builder().schema(env.schema()).topic(config).build(), busy);
    TransactionRecorder recorder = new TransactionRecorder(env.dataSource());
    RelayCycle cycle = relayOnceThrough(recorder, config);

    assertThat(cycle.published()).isEqualTo(ROWS);
    String marking = shards == 2 ? "MA" : "CMA";
    assertThat(recorder.committed().stream().map(RelayFoldedMarkTest::shape).filter(s -> !s.isEmpty()).toList())
        .containsExactly("CA", marking, marking, marking, marking, marking, "C");
    assertThat(env.queryLong("select count(*) from relay_lease where topic = ? and shard < ? and batch_ids is null"
        + " and last_ms = 0", topic, busyShard)).as("the idle shards: nothing ever assigned").isEqualTo(busyShard);
    assertThat(env.queryLong("select count(*) from relay_lease where topic = ? and batch_ids is not null", topic))
        .isZero();
    for (int idle = 0; idle < busyShard; idle++) {
      assertThat(env.redis().exists(StreamFormat.streamKey(env.keyPrefix(), topic, idle))).isFalse();
    }
    List<RelayTestSupport.Entry> entries =
        RelayTestSupport.entries(env.redis(), StreamFormat.streamKey(env.keyPrefix(), topic, busyShard));
    assertThat(entries).hasSize(ROWS);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    RelayTestSupport.assertInOutboxIdOrder(entries);
    assertThat(RelayTestSupport.unpublished(env, topic)).isZero();
  }

  /** Where in the folded cycle the relay dies. */
  enum CrashPoint {
    /** The third batch is in the stream, its mark waits for the next cycle. */
    AFTER_THE_WRITE,
    /**
     * A cycle's transaction is open (its check ran) and holds a mark of a written batch and the next assignment, not
     * yet sent: they go with the COMMIT in one round trip, and RoundTripTest shows that a failure there commits
     * nothing.
     */
    IN_THE_CYCLE_TRANSACTION,
    /** A cycle committed the mark and the next assignment; that batch is not written yet. */
    BEFORE_THE_WRITE
  }

  @ParameterizedTest
  @EnumSource(CrashPoint.class)
  void aRelayKilledAnywhereInTheFoldedCycleLeavesOneBatchUnconfirmedAndItsSuccessorAddsNothingTwice(
      CrashPoint point) throws Exception {
    appendKeyed(env, TOPIC, ROWS);
    AtomicBoolean crashed = new AtomicBoolean();
    AtomicInteger writes = new AtomicInteger();
    AtomicInteger assignments = new AtomicInteger();
    AtomicInteger folded = new AtomicInteger();
    Relay crashing = RelayTestSupport.relay(env, TOPIC).batchSize(BATCH, BATCH).leaseTtl(Duration.ofMillis(600))
        .faults(new RelayFaults() {
          @Override
          public void afterStreamWrite(ShardId shard, int rows) {
            crashIf(point == CrashPoint.AFTER_THE_WRITE && writes.incrementAndGet() == 3);
          }

          @Override
          public void beforeCycleCommit(int marked, int assigned) {
            crashIf(point == CrashPoint.IN_THE_CYCLE_TRANSACTION && marked > 0 && assigned > 0
                && folded.incrementAndGet() == 2);
          }

          @Override
          public void beforeStreamWrite(ShardId shard, int rows) {
            crashIf(point == CrashPoint.BEFORE_THE_WRITE && assignments.incrementAndGet() == 3);
          }

          private void crashIf(boolean now) {
            if (now) {
              crashed.set(true);
              throw new SimulatedCrash(point.name());
            }
          }
        }).build();
    crashing.start();
    await().atMost(Duration.ofSeconds(20)).untilTrue(crashed);
    await().atMost(Duration.ofSeconds(10)).until(() -> crashing.health().has("relay-thread-dead"));

    long published = env.queryLong("select count(*) from outbox where published_at is not null");
    long pending = env.queryLong("select coalesce(sum(cardinality(batch_ids)), 0) from relay_lease");
    long inStream = env.redis().xlen(key());
    assertThat(pending).as("exactly one batch of the shard is unconfirmed").isEqualTo(BATCH);
    if (point == CrashPoint.BEFORE_THE_WRITE) {
      assertThat(published).as("the third cycle marked the second batch").isEqualTo(2L * BATCH);
      assertThat(inStream).as("the assigned batch never reached Redis").isEqualTo(published);
    } else {
      assertThat(published).isGreaterThanOrEqualTo(BATCH).isLessThan(ROWS);
      if (point == CrashPoint.AFTER_THE_WRITE) {
        assertThat(published).isEqualTo(2L * BATCH);
      }
      assertThat(inStream).as("the unconfirmed batch is in the stream").isEqualTo(published + BATCH);
    }

    long resent = RelayTestSupport.relayUntilPublished(env, RelayTestSupport.relay(env, TOPIC)
        .leaseTtl(Duration.ofMillis(600)));
    assertThat(resent).as("rows the successor sent again and found")
        .isEqualTo(point == CrashPoint.BEFORE_THE_WRITE ? 0 : BATCH);
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key());
    assertThat(entries).hasSize(ROWS);
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(ROWS);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    RelayTestSupport.assertInOutboxIdOrder(entries);
    assertThat(env.queryLong("select count(*) from relay_lease where batch_ids is not null")).isZero();
    crashing.close(Duration.ofMillis(100));
  }

  @Test
  void aStreamLostWhileAWrittenBatchWaitsForItsMarkGetsThatBatchBack() throws Exception {
    appendKeyed(env, TOPIC, 300);
    AtomicInteger writes = new AtomicInteger();
    AtomicLong republished = new AtomicLong();
    try (Relay relay = RelayTestSupport.relay(env, TOPIC).batchSize(BATCH, BATCH).faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        if (writes.incrementAndGet() == 1) {
          // Redis loses what it just accepted (a restart without persistence) while the mark waits.
          env.redis().del(key(), StreamFormat.relayKey(key()));
        }
      }
    }).listener(new RelayListener() {
      @Override
      public void streamLost(ShardId shard, long rows) {
        republished.addAndGet(rows);
      }
    }).build()) {
      relay.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> RelayTestSupport.unpublished(env) == 0 && env.redis().xlen(key()) == 300);
    }
    assertThat(republished.get()).as("the first batch, marked after the loss, was published again")
        .isEqualTo(BATCH);
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key());
    assertThat(entries).hasSize(300);
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(300);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    RelayTestSupport.assertInOutboxIdOrder(entries);
  }

  /** {@code relayOnce()} of a relay of {@code topic} (batches of {@value #BATCH}) whose transactions are recorded. */
  private RelayCycle relayOnceThrough(TransactionRecorder recorder, TopicConfig topic) {
    try (Relay relay = Relay.builder(recorder, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(topic).batchSize(BATCH, BATCH).build()) {
      return relay.relayOnce();
    }
  }

  private static String shape(List<String> transaction) {
    StringBuilder out = new StringBuilder();
    // A cycle sends its marks, assignments and COMMIT as one execute (one round trip): split it into its statements.
    for (String sql : transaction.stream().flatMap(s -> java.util.Arrays.stream(s.split(";\n"))).toList()) {
      if (sql.contains(".outbox o WHERE o.topic = s.topic")) {
        out.append('C');
      } else if (sql.contains(".relay_mark_batches(")) {
        out.append('M');
      } else if (sql.contains(".relay_assign_batches(")) {
        out.append('A');
      }
    }
    return out.toString();
  }

  private String key() {
    return StreamFormat.streamKey(env.keyPrefix(), TOPIC, 0);
  }
}
