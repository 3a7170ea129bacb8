package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.SlotMigration;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A shard's slot moves to another master while payments flow ({@code CLUSTER SETSLOT ... IMPORTING/MIGRATING},
 * {@code MIGRATE} key by key, then {@code SETSLOT ... NODE}): nothing is lost and nothing is charged twice. While the
 * stream and its relay hash are on two nodes, the relay's publish script gets {@code TRYAGAIN}; the relay retries
 * the cycle, the shards on other masters are still published meanwhile, and the consumer counts no delivery
 * against a message for it.
 */
@HandoffTest
class ClusterSlotMigrationTest {

  private static RedisCluster cluster;

  private final TestEnvironment env;

  ClusterSlotMigrationTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  void aShardsSlotMigratedMidRunLosesNothingAndDoublesNothing() throws Exception {
    int shard = 0;
    try (LogCapture logs = LogCapture.start(); ClusterPayments payments = new ClusterPayments(env, cluster)) {
      String stream = payments.streamKey(shard);
      int slot = JedisClusterCRC16.getSlot(stream);
      HostAndPort source = cluster.nodeForSlot(slot);
      HostAndPort target = cluster.masters().stream().filter(m -> !m.equals(source)).findFirst().orElseThrow();
      int other = IntStream.range(0, ClusterPayments.SHARDS).filter(s -> {
        HostAndPort node = cluster.nodeForKey(payments.streamKey(s));
        return !node.equals(source) && !node.equals(target);
      }).findFirst().orElseThrow();
      payments.start(800);
      payments.awaitAppended(100);
      ConsumerTestKit.await("shard " + shard + " published", Duration.ofSeconds(30),
          () -> payments.confirmedAdded(shard) > 0);

      SlotMigration migration = cluster.beginMigration(slot, target);
      long beforeSplit = payments.confirmedAdded(shard);
      // MIGRATING with every key still on the source: the source serves the slot as before.
      ConsumerTestKit.await("shard " + shard + " published while its slot is MIGRATING", Duration.ofSeconds(30),
          () -> payments.confirmedAdded(shard) > beforeSplit);
      assertThat(migration.moveKeys(1)).isEqualTo(1); // the stream and its relay hash on two nodes now
      ConsumerTestKit.await("the relay met TRYAGAIN", Duration.ofSeconds(30),
          () -> payments.relayFailures.stream().anyMatch(e -> String.valueOf(e.getMessage()).startsWith("TRYAGAIN")));
      long splitAt = payments.confirmedAdded(shard);
      long otherAtSplit = payments.confirmedAdded(other);
      // Payments keep coming while the slot is split; the shards on the other masters are still published.
      ConsumerTestKit.await("shard " + other + " published while shard " + shard + " is split", Duration.ofSeconds(30),
          () -> payments.confirmedAdded(other) > otherAtSplit);
      assertThat(payments.confirmedAdded(shard)).as("nothing confirmed in the split shard").isEqualTo(splitAt);
      migration.finish();
      assertThat(cluster.nodeForSlot(slot)).isEqualTo(target);

      long rows = payments.awaitAllCharged(Duration.ofSeconds(90));

      assertThat(rows).isEqualTo(800);
      assertThat(payments.charges()).as("charge rows").isEqualTo(rows);
      assertThat(payments.doubleCharges()).isZero();
      assertThat(payments.uncharged()).isZero();
      assertThat(payments.streamEntries()).as("stream entries").isEqualTo(rows);
      assertThat(payments.redisAdded()).as("entries the relay counted in Redis").isEqualTo(rows);
      assertThat(payments.pendingTotal()).isZero();
      assertThat(payments.deadLetters()).isZero();
      assertThat(payments.outcomes.failed).as("deliveries counted as failed").hasValue(0);
      assertThat(payments.outcomes.deadLettered).hasValue(0);
      assertThat(payments.anomalies).hasValue(0);
      assertThat(payments.republished).as("streams reported lost").isEmpty();
      // Every failed cycle was Redis's, logged as a cycle failure to retry, never as a data problem.
      assertThat(payments.relayFailures).allSatisfy(e -> assertThat(e).isInstanceOf(JedisException.class));
      List<String> relayLines = logs.warnings().stream().filter(l -> l.contains("dev.handoff.relay.Relay")).toList();
      assertThat(relayLines).isNotEmpty().allSatisfy(l -> assertThat(l).containsAnyOf("cycle failed, retrying",
          "the loss check of 1 shard(s) failed, checked again"));
    }
  }
}
