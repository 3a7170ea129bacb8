package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/** A SIGKILLed master's replica takes over by itself, and the cluster client writes to it afterwards. */
class RedisClusterFailoverTest {

  private static RedisCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  void theReplicaOfAKilledMasterIsPromotedAndTheClientWritesToIt() {
    String key = "failover:{f}:counter";
    int slot = JedisClusterCRC16.getSlot(key);
    HostAndPort master = cluster.nodeForSlot(slot);
    HostAndPort replica = cluster.replicaOf(master);
    long pid = cluster.pid(master);
    try (RedisClusterClient client = cluster.newClient()) {
      client.set(key, "before");
      try (Jedis m = cluster.admin(master)) {
        // Replication is asynchronous: wait for the replica's acknowledgement, so the value must survive.
        assertThat(m.waitReplicas(1, 5000)).isEqualTo(1);
      }

      cluster.killMaster(master);
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
      HostAndPort promoted = cluster.awaitPromotion(master);

      assertThat(promoted).isEqualTo(replica);
      assertThat(cluster.nodeForSlot(slot)).isEqualTo(replica);
      assertThat(cluster.masters()).hasSize(3).contains(replica).doesNotContain(master);
      assertThat(cluster.slotCounts()).containsExactlyInAnyOrder(5461, 5461, 5462);
      try (Jedis r = cluster.admin(replica)) {
        assertThat(RedisCluster.field(r.info("replication"), "role")).isEqualTo("master");
      }
      // The client's map still names the dead master: it gets connection errors, refreshes, and goes to the new one.
      assertThat(client.get(key)).isEqualTo("before");
      client.set(key, "after");
      try (Jedis r = cluster.admin(replica)) {
        assertThat(r.get(key)).isEqualTo("after");
      }
      assertThat(cluster.seeds()).hasSize(5).doesNotContain(master);
    }
    for (HostAndPort node : List.copyOf(cluster.seeds())) {
      try (Jedis jedis = cluster.admin(node)) {
        assertThat(RedisCluster.field(jedis.clusterInfo(), "cluster_state")).isEqualTo("ok");
      }
    }
  }
}
