package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A master SIGKILLed mid-run while its replica lacks the last writes, and the replica promoted: every payment is
 * charged once in the end. Replication is asynchronous, so a promoted replica may lack stream entries the relay
 * already confirmed, and the {@code added} counter beside them (same slot, same replication stream). The test makes
 * that loss certain instead of lucky: it cuts the replica off its master first (a wrong {@code masterauth} and
 * {@code CLIENT KILL TYPE master} on the replica, so every resync fails at AUTH), lets the relay confirm entries the
 * replica never gets, then kills the master. The relay's counter check sees the shortfall on the promoted node and
 * publishes the shard's rows again with their original IDs; the consumer's inbox absorbs what it had charged.
 */
@HandoffTest
class ClusterFailoverTest {

  private static RedisCluster cluster;

  private final TestEnvironment env;

  ClusterFailoverTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
    // Stream nodes of 10 entries, so the relay's approximate trims (MINID ~, whole nodes) evict entries in a short run.
    for (HostAndPort node : cluster.seeds()) {
      try (Jedis jedis = cluster.admin(node)) {
        jedis.configSet("stream-node-max-entries", "10");
      }
    }
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  void aMasterKilledWhileItsReplicaLagsLosesTheTailWhichTheRelayRepublishesAndEveryPaymentIsChargedOnce()
      throws Exception {
    int shard = 0;
    try (LogCapture logs = LogCapture.start(); ClusterPayments payments = new ClusterPayments(env, cluster, 10)) {
      String stream = payments.streamKey(shard);
      String relayHash = StreamFormat.relayKey(stream);
      HostAndPort master = cluster.nodeForSlot(JedisClusterCRC16.getSlot(stream));
      HostAndPort replica = cluster.replicaOf(master);
      payments.start(800);
      payments.awaitAppended(100);
      ConsumerTestKit.await("shard " + shard + " published", Duration.ofSeconds(30),
          () -> payments.confirmedAdded(shard) > 0);
      ShardId lostShard = new ShardId(ClusterPayments.TOPIC, shard);
      // Trimmed below what the group finished before the cut: those entries are gone on both nodes, and need
      // nothing after the failover.
      ConsumerTestKit.await("shard " + shard + " trimmed", Duration.ofSeconds(30),
          () -> payments.trimmed.containsKey(lostShard));

      long replicaHas;
      try (Jedis r = cluster.admin(replica)) {
        // Replication cut: the replica's next handshakes all fail at AUTH (its master has no password), so it
        // stays a consistent but stale copy until it is promoted.
        r.configSet("masterauth", "not-the-masters-password");
        r.sendCommand(Protocol.Command.CLIENT, "KILL", "TYPE", "master");
        ConsumerTestKit.await("the replica's link down", Duration.ofSeconds(10),
            () -> r.info("replication").contains("master_link_status:down"));
        r.readonly();
        replicaHas = Long.parseLong(r.hget(relayHash, "added"));
      }
      ConsumerTestKit.await("the relay confirmed 20 entries of shard " + shard + " the replica lacks",
          Duration.ofSeconds(30), () -> payments.confirmedAdded(shard) >= replicaHas + 20);
      long confirmedAtKill = payments.confirmedAdded(shard);
      try (Jedis r = cluster.admin(replica)) {
        r.readonly();
        assertThat(Long.parseLong(r.hget(relayHash, "added"))).as("the replica still lacks them")
            .isEqualTo(replicaHas);
      }

      cluster.killMaster(master);
      assertThat(cluster.awaitPromotion(master)).isEqualTo(replica);
      long rows = payments.awaitAllCharged(Duration.ofSeconds(120));

      assertThat(payments.republished).containsKey(lostShard);
      assertThat(payments.republished.get(lostShard).get()).as("rows of shard %d published again", shard)
          .isGreaterThanOrEqualTo(confirmedAtKill - replicaHas)
          // not those trimmed before the cut: the group had finished them, and they were gone on both nodes
          .isLessThan(confirmedAtKill);
      assertThat(logs.warnings()).anySatisfy(l -> assertThat(l).contains("REDIS LOST STREAM " + stream + " ENTRIES"));
      assertThat(rows).isEqualTo(800);
      assertThat(payments.charges()).as("charge rows").isEqualTo(rows);
      assertThat(payments.doubleCharges()).isZero();
      assertThat(payments.uncharged()).isZero();
      assertThat(payments.redisAdded()).as("entries the relay counted in Redis").isEqualTo(rows);
      assertThat(payments.pendingTotal()).isZero();
      assertThat(payments.deadLetters()).isZero();
      assertThat(payments.outcomes.failed).as("deliveries counted as failed").hasValue(0);
      assertThat(payments.outcomes.deadLettered).hasValue(0);
      assertThat(payments.anomalies).hasValue(0);
    }
  }
}
