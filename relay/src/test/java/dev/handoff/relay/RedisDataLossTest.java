package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.StreamId;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.params.XTrimParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * Redis losing part of what the relay wrote, each way the relay's checks in {@code publish.lua} and
 * {@code list-watermark.lua} must catch: an older snapshot, a stream removed while its bookkeeping hash stayed, and
 * a list whose unfinished elements are not where a naive scan would look.
 */
@HandoffTest
class RedisDataLossTest {

  private final TestEnvironment env;
  private final AtomicLong republished = new AtomicLong();
  private final AtomicLong alreadyPresent = new AtomicLong();

  RedisDataLossTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
  }

  @Test
  void redisBackFromAnOlderSnapshotGetsTheMissingEntriesOnceAndKeepsThePresentOnes(@TempDir Path dir)
      throws Exception {
    RestartableRedis server = RestartableRedis.startWithSnapshots(dir);
    try (server) {
      RedisClient redis = env.newRedisClient(server.uri());
      String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
      try (Relay relay = relay(redis, "orders").build()) {
        RelayTestSupport.append(env, "orders", 300);
        publishAll(relay);
        server.snapshot(); // Redis's disk now holds 300 entries and an entries-added count of 300
        RelayTestSupport.append(env, "orders", 200);
        publishAll(relay);
        assertThat(redis.xlen(key)).isEqualTo(500);

        server.killAndRestartFromSnapshot();
        assertThat(RelayTestSupport.reconnected(redis).xlen(key)).as("the snapshot's entries only").isEqualTo(300);

        RelayTestSupport.append(env, "orders", 50);
        publishAll(relay);
      }
      // Exactly once into the stream: every outbox row added once, whatever Redis held when it came back.
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(redis, key);
      assertThat(entries).hasSize(550);
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(550);
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
      assertThat(redis.xinfoStream(key).getStreamInfo().get("entries-added")).isEqualTo(550L);
      assertThat(redis.hget(StreamFormat.streamKey(env.keyPrefix(), "orders", 0) + ":relay", "added"))
          .isEqualTo("550");
      // From the last entry the snapshot holds on: that one (found) and the 200 it lacked; not the 299 below it.
      assertThat(republished.get()).as("the rows sent again").isEqualTo(201);
      assertThat(alreadyPresent.get()).as("the snapshot's last entry was recognised, not added again").isEqualTo(1);
    }
  }

  @Test
  void anOlderCopyOfATrimmedStreamGetsOnlyWhatItLacksWithTheOriginalIdsAndNoAnomaly(@TempDir Path dir)
      throws Exception {
    RestartableRedis server = RestartableRedis.startWithSnapshots(dir);
    AtomicLong anomalies = new AtomicLong();
    AtomicLong trimmed = new AtomicLong();
    try (server) {
      RedisClient redis = env.newRedisClient(server.uri());
      redis.configSet("stream-node-max-entries", "10"); // MINID ~ evicts whole nodes: small ones, so a trim bites
      String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
      try (Relay relay = relay(redis, "orders").trimSlack(50).listener(new RelayListener() {
            @Override
            public void streamLost(ShardId shard, long rows) {
              republished.addAndGet(rows);
            }

            @Override
            public void anomaly(ShardId shard, int rows, String detail) {
              anomalies.addAndGet(rows);
            }

            @Override
            public void trimmed(ShardId shard, String minId, long evicted) {
              trimmed.addAndGet(evicted);
            }
          }).build()) {
        RelayTestSupport.append(env, "orders", 300);
        publishAll(relay);
        // A group that finished the first 200: the trim right after the next publish (past trimSlack) drops
        // them, and stores no watermark.
        String finished = env.queryList("select stream_ms || '-' || stream_seq from outbox order by id offset 199"
            + " limit 1", String.class).get(0);
        redis.xgroupCreate(key, "billing", new StreamEntryID(finished), false);
        RelayTestSupport.append(env, "orders", 60);
        publishAll(relay);
        assertThat(trimmed.get()).as("entries trimmed below what the group finished").isPositive();
        long held = redis.xlen(key);
        assertThat(held).isEqualTo(360 - trimmed.get());
        server.snapshot(); // an older copy of the shard: 360 counted, the first `trimmed` gone
        RelayTestSupport.append(env, "orders", 200);
        publishAll(relay);

        server.killAndRestartFromSnapshot(); // as a replica promoted before it had the last 200
        assertThat(RelayTestSupport.reconnected(redis).xlen(key)).isEqualTo(held);
        publishAll(relay);
      }
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(redis, key);
      assertThat(entries).hasSize((int) (560 - trimmed.get()));
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(entries.size());
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
      assertThat(redis.hget(key + ":relay", "added")).isEqualTo("560");
      // From the last entry the copy holds (found present) on: the 200 it lacked, not what it holds or was trimmed.
      assertThat(republished.get()).isEqualTo(201);
      assertThat(anomalies.get()).as("rows refused as another writer's").isZero();
    }
  }

  /**
   * After a partial loss the relay sends again the rows from the copy's last entry on. When a trim removes that entry
   * (every group had finished it) between the loss check and the write, Redis refuses its ID as absent: the row was
   * delivered, and counts as published; before, it got a fresh ID and its message was in the stream twice (seen once
   * on a cluster failover, 168 entries).
   */
  @Test
  void aRowSentAgainAfterALossWhoseEntryATrimRemovedMeanwhileIsNotAddedTwice(@TempDir Path dir) throws Exception {
    RestartableRedis server = RestartableRedis.startWithSnapshots(dir);
    try (server) {
      RedisClient redis = env.newRedisClient(server.uri());
      String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
      AtomicLong anomalies = new AtomicLong();
      AtomicBoolean lossSeen = new AtomicBoolean();
      AtomicReference<String> lastOfCopy = new AtomicReference<>();
      AtomicLong trimmedBeforeResend = new AtomicLong(-1);
      try (Relay relay = relay(redis, "orders").trimStreams(false).listener(new RelayListener() {
        @Override
        public void streamLost(ShardId shard, long rows) {
          lossSeen.set(true);
        }

        @Override
        public void anomaly(ShardId shard, int rows, String detail) {
          anomalies.addAndGet(rows);
        }
      }).faults(new RelayFaults() {
        @Override
        public void beforeStreamWrite(ShardId shard, int rows) {
          // Between the loss check and the re-send: a trim of what every group finished, the copy's last entry too.
          if (lossSeen.get() && trimmedBeforeResend.get() < 0) {
            StreamId last = StreamId.parse(lastOfCopy.get());
            trimmedBeforeResend.set(redis.xtrim(key, XTrimParams.xTrimParams()
                .minId(new StreamId(last.ms(), last.seq() + 1).toString())));
          }
        }
      }).build()) {
        redis.xgroupCreate(key, "billing", new StreamEntryID(0, 0), true);
        RelayTestSupport.append(env, "orders", 30);
        publishAll(relay);
        finishAll(redis, key);
        lastOfCopy.set(redis.xrevrange(key, "+", "-", 1).get(0).getID().toString());
        server.snapshot(); // 30 entries, all finished by billing
        RelayTestSupport.append(env, "orders", 20);
        publishAll(relay);
        server.killAndRestartFromSnapshot();
        RelayTestSupport.reconnected(redis);

        RelayTestSupport.append(env, "orders", 1);
        publishAll(relay); // its write notices the loss; the rows from the copy's last entry on go again
      }
      assertThat(trimmedBeforeResend.get()).as("entries trimmed between the loss check and the re-send")
          .isEqualTo(30);
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(redis, key);
      assertThat(entries).as("the 20 the copy lacked and the new one; not the trimmed one again").hasSize(21);
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(21);
      assertThat(anomalies.get()).as("rows refused and given fresh IDs").isZero();
      assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
    }
  }

  /** Group billing reads and acknowledges every entry of {@code key}. */
  private static void finishAll(RedisClient redis, String key) {
    List<Map.Entry<String, List<StreamEntry>>> read = redis.xreadGroup("billing", "c",
        XReadGroupParams.xReadGroupParams().count(1000), Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    redis.xack(key, "billing", read.get(0).getValue().stream().map(StreamEntry::getID)
        .toArray(StreamEntryID[]::new));
  }

  @Test
  void aStreamRemovedWhileItsBookkeepingHashStayedIsDetectedAndRepublished() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    try (Relay relay = relay(redis, "orders").build()) {
      RelayTestSupport.append(env, "orders", 200);
      publishAll(relay);
      // Evicted or deleted by hand: the hash beside it still says 200 were added, so only the existence check
      // can tell.
      redis.del(key);
      assertThat(redis.hget(key + ":relay", "added")).isEqualTo("200");

      RelayTestSupport.append(env, "orders", 20);
      publishAll(relay);
    }
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(redis, key);
    assertThat(entries).hasSize(220);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
    assertThat(redis.xinfoStream(key).getStreamInfo().get("entries-added")).isEqualTo(220L);
    assertThat(republished.get()).isEqualTo(200);
  }

  @Test
  void listWatermarkIsTheLowestUnfinishedElementWhereverItIsAndALossRepushesFromThere() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    String list = ListFormat.listKey(env.keyPrefix(), "orders", 0);
    try (Relay relay = relay(redis, "orders").listTransport(1000).build()) {
      RelayTestSupport.append(env, "orders", 10);
      publishAll(relay);
      List<byte[]> e = redis.lrange(list.getBytes(StandardCharsets.UTF_8), 0, -1);
      assertThat(e).hasSize(10);
      // The state consumers leave after: e1, e2, e4 and e6 finished; consumer c1 took e7, then took e3 after the
      // reaper returned it from a dead consumer (so c1's list is out of ID order); e5 was returned to the head of
      // the list later. The head of the list (e5) and the head of c1's list (e7) are both above e3.
      String processing = ListFormat.processingKey(list, "c1");
      redis.del(list);
      redis.rpush(list.getBytes(StandardCharsets.UTF_8), e.get(4), e.get(7), e.get(8), e.get(9));
      redis.rpush(processing.getBytes(StandardCharsets.UTF_8), e.get(6), e.get(2));
      redis.hset(ListFormat.consumersKey(list), processing, "0");

      relay.maintainOnce();
      assertThat(redis.llen(list)).as("lists are never trimmed").isEqualTo(4);
      assertThat(redis.llen(processing)).isEqualTo(2);
      String e3 = ListFormat.decode(e.get(2)).id();
      assertThat(env.queryList("select watermark_ms || '-' || watermark_seq from relay_lease where topic = 'orders'",
          String.class)).containsExactly(e3);

      server.restart(); // the list, the processing list and the relay's hash are gone
      RelayTestSupport.reconnected(redis);
      publishAll(relay);
    }
    List<String> ids = new ArrayList<>();
    for (byte[] raw : redis.lrange(list.getBytes(StandardCharsets.UTF_8), 0, -1)) {
      ids.add(ListFormat.decode(raw).id());
    }
    // Everything from e3 on is back, once, in ID order; e1 and e2, finished below the watermark, are not.
    assertThat(ids).containsExactlyElementsOf(env.queryList(
        "select stream_ms || '-' || stream_seq from outbox order by stream_ms, stream_seq offset 2", String.class));
    assertThat(republished.get()).isEqualTo(8);
  }

  /** Runs relay cycles until nothing is unpublished; at least one, which is also what notices a loss. */
  private void publishAll(Relay relay) {
    relay.relayOnce();
    for (int i = 0; i < 100 && env.queryLong("select count(*) from outbox where published_at is null") > 0; i++) {
      relay.relayOnce();
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
  }


  private RelayBuilder relay(RedisClient redis, String topic) {
    return Relay.builder(env.dataSource(), env.specOf(redis))
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .leaseTtl(Duration.ofSeconds(5))
        .listener(new RelayListener() {
          @Override
          public void streamLost(ShardId shard, long rows) {
            republished.addAndGet(rows);
          }

          @Override
          public void alreadyPresent(ShardId shard, int rows) {
            alreadyPresent.addAndGet(rows);
          }
        });
  }

}
