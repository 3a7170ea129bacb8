package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.resps.StreamEntry;

/**
 * Retention keeps pace with publishing: a relay that is never idle still maintains on schedule, a stream fed faster
 * than one trim call per interval stays within the slack of what its groups have not finished, and the outbox purge
 * leaves nothing past retention, or says exactly how much when its budget ran out.
 */
@HandoffTest
class RelayRetentionPaceTest {

  private final TestEnvironment env;

  RelayRetentionPaceTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, outbox_purged, relay_lease, relay_member");
  }

  @Test
  void aStartedRelayThatIsNeverIdleTrimsPurgesAndRaisesItsWatermarkOnSchedule() throws Exception {
    String key = StreamFormat.streamKey(env.keyPrefix(), "steady", 0);
    RedisClient redis = env.redis();
    redis.xgroupCreate(key, "billing", new StreamEntryID(0, 0), true);
    List<RetentionReport> runs = new CopyOnWriteArrayList<>();
    AtomicLong trimmed = new AtomicLong();
    AtomicLong published = new AtomicLong();
    AtomicBoolean load = new AtomicBoolean(true);
    AtomicLong appended = new AtomicLong();
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    append(outbox, "steady", 5);
    appended.addAndGet(5);
    try (Relay relay = relay(redis, "steady")
        .maintenanceInterval(Duration.ofMillis(200))
        .outboxRetention(Duration.ofMillis(300))
        .retentionBatchSize(10)
        // Every write to the stream commits new rows and lets the group finish everything: the relay always has
        // something to publish, so no cycle of its loop is ever idle while the load runs.
        .faults(new RelayFaults() {
          @Override
          public void afterStreamWrite(ShardId shard, int rows) {
            if (load.get()) {
              try {
                append(outbox, "steady", 5);
                appended.addAndGet(5);
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
              redis.xgroupSetID(key, "billing", StreamEntryID.XGROUP_LAST_ENTRY);
            }
          }
        })
        .listener(new RelayListener() {
          @Override
          public void maintained(RetentionReport report) {
            runs.add(report);
          }

          @Override
          public void trimmed(ShardId shard, String minId, long evicted) {
            trimmed.addAndGet(evicted);
          }

          @Override
          public void published(ShardId shard, int rows, long oldestCreatedAtMillis) {
            published.addAndGet(rows);
          }
        }).build()) {
      relay.start();
      // Conditions, not a pace: how many rows a loaded machine publishes per maintenance interval varies, what must
      // hold is that maintenance ran, trimmed, purged and stored a watermark while the loop was never idle.
      await("three maintenance runs that trimmed and purged while 100 rows and more were published")
          .atMost(Duration.ofSeconds(60))
          .until(() -> runs.size() >= 3 && trimmed.get() > 0 && runs.stream().mapToLong(RetentionReport::purged).sum() > 0
              && env.queryLong("SELECT watermark_ms FROM relay_lease WHERE topic = 'steady'") > 0
              && published.get() > 100);
      load.set(false);

      assertThat(runs).allSatisfy(r -> assertThat(r.streams()).extracting(s -> s.shard().topic())
          .containsExactly("steady"));
    }
    // After close nothing purges any more. A run the close cut short committed purges it never reported, so the log
    // holds at least what the reports say, and every appended row is either still in the outbox or in the log.
    assertThat(env.queryLong("SELECT count(*) FROM outbox_purged WHERE topic = 'steady'")).isPositive();
    assertThat(env.queryLong("SELECT coalesce(sum(rows), 0) FROM outbox_purged"))
        .isGreaterThanOrEqualTo(runs.stream().mapToLong(RetentionReport::purged).sum());
    assertThat(env.queryLong("SELECT count(*) FROM outbox") + env.queryLong(
        "SELECT coalesce(sum(rows), 0) FROM outbox_purged")).isEqualTo(appended.get());
  }

  @Test
  void aStreamFedFasterThanOneTrimCallPerIntervalStaysWithinSlackOfWhatItsGroupsHaveNotFinished() throws Exception {
    // One entry per stream node: Redis's approximate trim (MINID ~) is then exact, so the lengths below are exact.
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    redis.configSet("stream-node-max-entries", "1");
    String key = StreamFormat.streamKey(env.keyPrefix(), "fast", 0);
    redis.xgroupCreate(key, "fast", new StreamEntryID(0, 0), true);
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    int slack = 50;
    int perCycle = 300;
    try (Relay relay = relay(redis, "fast").trimLimit(20).trimSlack(slack).maintenanceInterval(Duration.ofHours(1))
        .build()) {
      for (int cycle = 0; cycle < 5; cycle++) {
        append(outbox, "fast", perCycle);
        relay.relayOnce();
        long unfinished = after(redis, key, lastDelivered(redis, key, "fast")).size();
        assertThat(unfinished).as("cycle %d: entries the group has not read", cycle).isEqualTo(perCycle);
        assertThat(redis.xlen(key) - unfinished).as("cycle %d: finished entries the stream still holds", cycle)
            .isBetween(0L, (long) slack);
        redis.xgroupSetID(key, "fast", StreamEntryID.XGROUP_LAST_ENTRY); // the group finishes the cycle's entries
      }

      // A lagging group holds back exactly what it has not finished, and the report says which group it is.
      StreamEntryID lagAt = StreamEntryID.XGROUP_LAST_ENTRY;
      redis.xgroupCreate(key, "lagging", lagAt, false);
      String laggingFrom = lastDelivered(redis, key, "lagging");
      for (int cycle = 0; cycle < 3; cycle++) {
        append(outbox, "fast", perCycle);
        relay.relayOnce();
        redis.xgroupSetID(key, "fast", StreamEntryID.XGROUP_LAST_ENTRY);
      }
      RetentionReport report = relay.maintainOnce();
      List<StreamEntry> notFinished = after(redis, key, laggingFrom);

      assertThat(notFinished).hasSize(3 * perCycle);
      assertThat(report.streams()).hasSize(1);
      RetentionReport.StreamRetention s = report.streams().get(0);
      assertThat(s.holdingGroup()).isEqualTo("lagging");
      assertThat(s.minId()).isEqualTo(laggingFrom);
      // The trim keeps the group's last-delivered entry itself (MINID keeps IDs at or above it) and all after it.
      assertThat(s.length()).isEqualTo(3 * perCycle + 1);
      assertThat(redis.xlen(key)).isEqualTo(3 * perCycle + 1);
      assertThat(s.caughtUp()).isTrue();
      assertThat(report.caughtUp()).isTrue();
      assertThat(env.queryLong("SELECT watermark_ms FROM relay_lease WHERE topic = 'fast'") + "-"
          + env.queryLong("SELECT watermark_seq FROM relay_lease WHERE topic = 'fast'")).isEqualTo(laggingFrom);
    }
  }

  @Test
  void theOutboxPurgeLeavesNoRowPastRetentionOrReportsTheExactLagWhenItsBudgetRanOut() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Relay relay = relay(env.redis(), "archive").outboxRetention(Duration.ofMillis(1)).retentionBatchSize(10)
        .build();
        Relay hurried = relay(env.redis(), "archive").outboxRetention(Duration.ofMillis(1)).retentionBatchSize(10)
            .retentionBudget(Duration.ofNanos(1)).build()) {
      append(outbox, "archive", 250);
      relay.relayOnce();
      awaitDatabaseClockPast(Duration.ofMillis(5));

      RetentionReport caughtUp = relay.maintainOnce();

      assertThat(caughtUp.purged()).isEqualTo(250);
      assertThat(caughtUp.rowsPastRetention()).isZero();
      assertThat(caughtUp.caughtUp()).isTrue();
      assertThat(env.queryLong("SELECT count(*) FROM outbox")).isZero();
      assertThat(env.queryLong("SELECT sum(rows) FROM outbox_purged")).isEqualTo(250);

      append(outbox, "archive", 250);
      relay.relayOnce();
      relay.close();
      hurried.relayOnce();
      awaitDatabaseClockPast(Duration.ofMillis(5));

      RetentionReport behind = hurried.maintainOnce();

      assertThat(behind.purged()).as("one batch: the budget was spent before the second").isEqualTo(10);
      assertThat(behind.caughtUp()).isFalse();
      assertThat(behind.rowsPastRetention()).isEqualTo(240);
      assertThat(behind.rowsPastRetentionExact()).isTrue();
      assertThat(behind.oldestPastRetention()).isPositive();
      assertThat(env.queryLong("SELECT count(*) FROM outbox")).isEqualTo(240);
      assertThat(hurried.lastRetention()).contains(behind);
    }
  }

  @Test
  void aPurgeOutOfBudgetStopsEvenWhenTheOldestRowsCannotBeDeleted() throws Exception {
    // The oldest 3,000 rows were appended long ago and never published (a shard no relay serves, say): no purge may
    // delete them, and walking past them must not ignore the budget.
    env.execute("INSERT INTO outbox (message_id, topic, shard, type, payload, created_at)"
        + " SELECT gen_random_uuid(), 'stuck', 0, 'entry', '\\x00', now() - interval '30 days'"
        + " FROM generate_series(1, 3000)");
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    append(outbox, "stuck", 100);
    try (Relay hurried = relay(env.redis(), "stuck").outboxRetention(Duration.ofMillis(1)).retentionBatchSize(10)
        .retentionBudget(Duration.ofNanos(1)).build();
        Relay patient = relay(env.redis(), "stuck").outboxRetention(Duration.ofMillis(1)).retentionBatchSize(10)
            .build()) {
      // the 100 newest as a relay leaves them: published (no relay runs here, so nothing else changes)
      env.execute("UPDATE outbox SET stream_ms = 1, stream_seq = id, published_at = now()"
          + " WHERE created_at > now() - interval '1 day'");
      awaitDatabaseClockPast(Duration.ofMillis(5));

      RetentionReport stopped = hurried.maintainOnce();

      assertThat(stopped.purged()).as("one bounded step among rows that must stay").isZero();
      assertThat(stopped.caughtUp()).isFalse();
      assertThat(env.queryLong("SELECT count(*) FROM outbox")).isEqualTo(3_100);

      RetentionReport done = patient.maintainOnce();

      assertThat(done.purged()).isEqualTo(100);
      assertThat(done.caughtUp()).isTrue();
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isEqualTo(3_000);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------

  private RelayBuilder relay(RedisClient redis, String topic) {
    return Relay.builder(env.dataSource(), env.specOf(redis))
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .leaseTtl(Duration.ofSeconds(5))
        .idlePollInterval(Duration.ofMillis(20));
  }

  private void append(Outbox outbox, String topic, int n) throws SQLException {
    RelayTestSupport.appendAll(env, outbox, RelayTestSupport.unkeyed(topic, n));
  }

  private static String lastDelivered(RedisClient redis, String key, String group) {
    return redis.xinfoGroups(key).stream().filter(g -> g.getName().equals(group)).findFirst().orElseThrow()
        .getLastDeliveredId().toString();
  }

  /** The entries after {@code id}, exclusive. */
  private static List<StreamEntry> after(RedisClient redis, String key, String id) {
    return redis.xrange(key, "(" + id, "+", 1_000_000);
  }

  private void awaitDatabaseClockPast(Duration by) {
    long start = env.queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    await("the database clock to move " + by).atMost(Duration.ofSeconds(5)).until(() -> env.queryLong(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint") >= start + by.toMillis());
  }
}
