package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

@HandoffTest
class RelayRedisLossAndRetentionTest {

  private final TestEnvironment env;

  RelayRedisLossAndRetentionTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
  }

  @Test
  void redisRestartedWithoutPersistenceGetsTheStreamBackWithTheOriginalIds() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    AtomicLong lostEvents = new AtomicLong();
    String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    try (Relay relay = relay(redis, "orders").listener(new RelayListener() {
      @Override
      public void streamLost(ShardId shard, long republished) {
        lostEvents.addAndGet(republished);
      }
    }).build()) {
      RelayTestSupport.append(env, "orders", 500);
      assertThat(relay.relayOnce().published()).isEqualTo(500);
      List<RelayTestSupport.Entry> before = RelayTestSupport.entries(redis, key);
      assertThat(before).hasSize(500);

      server.restart();
      assertThat(RelayTestSupport.reconnected(redis).exists(key)).isFalse();

      RelayTestSupport.append(env, "orders", 100);
      relay.relayOnce();

      List<RelayTestSupport.Entry> after = RelayTestSupport.entries(redis, key);
      assertThat(after).hasSize(600);
      assertThat(after.subList(0, 500)).isEqualTo(before);
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, after);
      assertThat(lostEvents.get()).isEqualTo(500);
      assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();

      // And it carries on as usual.
      RelayTestSupport.append(env, "orders", 10);
      assertThat(relay.relayOnce().published()).isEqualTo(10);
      assertThat(redis.xlen(key)).isEqualTo(610);
    }
  }

  @Test
  void restartDetectedWhileIdleAndRowsBelowTheWatermarkAreNotResent() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    redis.xgroupCreate(key, "billing", new StreamEntryID(0, 0), true);
    try (Relay relay = relay(redis, "orders").build()) {
      RelayTestSupport.append(env, "orders", 300);
      relay.relayOnce();
      readAndAck(redis, key, "billing", 300);
      relay.maintainOnce();
      assertThat(env.queryLong("select watermark_ms from relay_lease where topic = 'orders'")).isPositive();
      RelayTestSupport.append(env, "orders", 50);
      relay.relayOnce();

      server.restart();
      // Nothing new is appended: the lease renewal probe notices the loss by itself.
      relay.relayOnce();
      List<RelayTestSupport.Entry> after = RelayTestSupport.entries(RelayTestSupport.reconnected(redis), key);
      assertThat(after).hasSize(51);
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, after);
    }
  }

  @Test
  void trimmingKeepsEverythingALaggingGroupHasNotFinishedAndDropsAcknowledgedHistory() throws Exception {
    RedisClient redis = env.redis();
    String key = StreamFormat.streamKey(env.keyPrefix(), "ledger", 0);
    redis.xgroupCreate(key, "fast", new StreamEntryID(0, 0), true);
    redis.xgroupCreate(key, "slow", new StreamEntryID(0, 0), true);
    try (Relay relay = relay(redis, "ledger").build()) {
      RelayTestSupport.append(env, "ledger", 1000);
      relay.relayOnce();
      List<RelayTestSupport.Entry> all = RelayTestSupport.entries(redis, key);
      assertThat(all).hasSize(1000);

      readAndAck(redis, key, "fast", 1000);
      List<StreamEntry> slowRead = read(redis, key, "slow", 600);
      ack(redis, key, "slow", slowRead.subList(0, 450));
      String oldestPending = slowRead.get(450).getID().toString();

      relay.maintainOnce();

      List<RelayTestSupport.Entry> kept = RelayTestSupport.entries(redis, key);
      assertThat(kept.size()).as("acknowledged history is removed").isLessThan(1000);
      List<String> keptIds = kept.stream().map(RelayTestSupport.Entry::id).toList();
      assertThat(keptIds).as("everything from the oldest pending entry on is kept")
          .containsAll(all.subList(450, 1000).stream().map(RelayTestSupport.Entry::id).toList());
      assertThat(redis.xpending(key, "slow").getTotal()).isEqualTo(150);
      assertThat(read(redis, key, "slow", 1000)).hasSize(400);
      String watermark = env.queryLong("select watermark_ms from relay_lease where topic = 'ledger'") + "-"
          + env.queryLong("select watermark_seq from relay_lease where topic = 'ledger'");
      assertThat(watermark).isEqualTo(oldestPending);
    }
  }

  @Test
  void aStreamWithoutGroupsIsNotTrimmedInsideTheRetentionWindow() throws Exception {
    RedisClient redis = env.redis();
    String key = StreamFormat.streamKey(env.keyPrefix(), "audit", 0);
    try (Relay relay = relay(redis, "audit").build()) {
      RelayTestSupport.append(env, "audit", 500);
      relay.relayOnce();
      relay.maintainOnce();
      assertThat(redis.xlen(key)).isEqualTo(500);
    }
  }

  @Test
  void retentionPurgeRemovesOnlyPublishedRowsOlderThanTheWindowInBatches() throws Exception {
    List<Long> purgedBatches = new ArrayList<>();
    try (Relay relay = relay(env.redis(), "archive").retentionBatchSize(1000)
        .outboxRetention(Duration.ofDays(7))
        .listener(new RelayListener() {
          @Override
          public void purged(long rows) {
            purgedBatches.add(rows);
          }
        }).build()) {
      RelayTestSupport.append(env, "archive", 3000);
      relay.relayOnce();
      RelayTestSupport.append(env, "archive", 200);
      env.execute(
          "update outbox set published_at = now() - interval '8 days' where id in "
              + "(select id from outbox where published_at is not null order by id limit 2500)",
          "update outbox set published_at = now() - interval '6 days' where id in "
              + "(select id from outbox where published_at > now() - interval '1 hour' order by id limit 300)",
          "update outbox set created_at = now() - interval '30 days' where published_at is null");
      relay.maintainOnce();
    }
    assertThat(purgedBatches).containsExactly(2500L);
    assertThat(env.queryLong("select count(*) from outbox")).isEqualTo(700);
    assertThat(env.queryLong("select count(*) from outbox where published_at < now() - interval '7 days'")).isZero();
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isEqualTo(200);
  }


  private RelayBuilder relay(RedisClient redis, String topic) {
    return Relay.builder(env.dataSource(), env.specOf(redis))
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .leaseTtl(Duration.ofSeconds(5));
  }


  private static List<StreamEntry> read(RedisClient redis, String key, String group, int count) {
    List<Map.Entry<String, List<StreamEntry>>> reply = redis.xreadGroup(group, "c1",
        XReadGroupParams.xReadGroupParams().count(count),
        Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    return reply == null || reply.isEmpty() ? List.of() : reply.get(0).getValue();
  }

  private static void ack(RedisClient redis, String key, String group, List<StreamEntry> entries) {
    redis.xack(key, group, entries.stream().map(StreamEntry::getID).toArray(StreamEntryID[]::new));
  }

  private static void readAndAck(RedisClient redis, String key, String group, int count) {
    ack(redis, key, group, read(redis, key, group, count));
  }
}
