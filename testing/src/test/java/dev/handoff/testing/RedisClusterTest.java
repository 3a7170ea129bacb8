package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/** The test cluster forms as documented, and Jedis's cluster client writes where CRC16 says and follows a move. */
class RedisClusterTest {

  private static RedisCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  /** docs/scaling.md's example of a cluster test, line for line (DocExamplesTest checks it). */
  @Test
  void aKeyIsReadBackFromTheMasterThatOwnsItsSlot() {
    try (RedisClusterClient client = cluster.newClient()) {   // seeds = all six nodes, RESP2
      client.set("handoff:{payments:3}", "v");
      HostAndPort owner = cluster.nodeForKey("handoff:{payments:3}");
      try (Jedis node = cluster.admin(owner)) {                // a plain connection to that node
        assertThat(node.get("handoff:{payments:3}")).isEqualTo("v");
      }
      assertThat(cluster.masters()).contains(owner);
    }
  }

  @Test
  void formsThreeMastersWithEvenSlotsAndOneAttachedReplicaEach() {
    List<HostAndPort> masters = cluster.masters();
    assertThat(masters).hasSize(3);
    assertThat(cluster.slotCounts()).containsExactly(5461, 5461, 5462);
    assertThat(cluster.seeds()).hasSize(6);
    Set<HostAndPort> replicas = new HashSet<>();
    for (HostAndPort master : masters) {
      HostAndPort replica = cluster.replicaOf(master);
      replicas.add(replica);
      try (Jedis jedis = cluster.admin(replica)) {
        String replication = jedis.info("replication");
        assertThat(RedisCluster.field(replication, "role")).isEqualTo("slave");
        assertThat(RedisCluster.field(replication, "master_port")).isEqualTo(Integer.toString(master.getPort()));
        assertThat(RedisCluster.field(replication, "master_link_status")).isEqualTo("up");
      }
    }
    assertThat(replicas).hasSize(3).doesNotContainAnyElementsOf(masters);
    for (HostAndPort node : cluster.seeds()) {
      try (Jedis jedis = cluster.admin(node)) {
        String info = jedis.clusterInfo();
        assertThat(RedisCluster.field(info, "cluster_state")).isEqualTo("ok");
        assertThat(RedisCluster.field(info, "cluster_slots_assigned")).isEqualTo("16384");
        assertThat(RedisCluster.field(info, "cluster_known_nodes")).isEqualTo("6");
        assertThat(RedisCluster.field(info, "cluster_size")).isEqualTo("3");
      }
    }
    assertThat(cluster.nodeForSlot(0)).isEqualTo(masters.get(0));
    assertThat(cluster.nodeForSlot(5461)).isEqualTo(masters.get(1));
    assertThat(cluster.nodeForSlot(16383)).isEqualTo(masters.get(2));
  }

  @Test
  void aKeyWrittenThroughTheClusterClientLandsOnTheMasterOfItsCrc16Slot() {
    try (RedisClusterClient client = cluster.newClient()) {
      for (String key : List.of("landing:a", "landing:b", "landing:c", "handoff:{payments:3}", "x:{payments:3}:relay")) {
        client.set(key, "v-" + key);
        int slot = JedisClusterCRC16.getSlot(key);
        HostAndPort owner = cluster.nodeForSlot(slot);
        try (Jedis jedis = cluster.admin(owner)) {
          assertThat(jedis.get(key)).isEqualTo("v-" + key);
          assertThat(jedis.clusterKeySlot(key)).isEqualTo(slot);
        }
        for (HostAndPort other : cluster.masters()) {
          if (!other.equals(owner)) {
            try (Jedis jedis = cluster.admin(other)) {
              assertThat(jedis.clusterCountKeysInSlot(slot)).isZero();
            }
          }
        }
      }
    }
    assertThat(JedisClusterCRC16.getSlot("handoff:{payments:3}"))
        .isEqualTo(JedisClusterCRC16.getSlot("x:{payments:3}:relay"))
        .isEqualTo(JedisClusterCRC16.getSlot("payments:3"));
  }

  @Test
  void aMigratedSlotTakesItsKeysAndTheClientFollowsAskDuringAndMovedAfter() {
    String tag = "{migrating}";
    int slot = JedisClusterCRC16.getSlot(tag + ":k0");
    HostAndPort source = cluster.nodeForSlot(slot);
    HostAndPort target = cluster.masters().stream().filter(m -> !m.equals(source)).findFirst().orElseThrow();
    try (RedisClusterClient client = cluster.newClient()) {
      for (int i = 0; i < 250; i++) {
        client.set(tag + ":k" + i, "v" + i);
      }
      SlotMigration migration = cluster.beginMigration(slot, target);
      assertThat(migration.moveKeys(100)).isEqualTo(100);
      assertThat(migration.keysOnSource()).isEqualTo(150);
      assertThat(migration.keysOnTarget()).isEqualTo(100);
      // Half the keys are on each side: the source answers the ones it has and ASKs for the others.
      for (int i = 0; i < 250; i++) {
        assertThat(client.get(tag + ":k" + i)).isEqualTo("v" + i);
      }
      // A new key of a migrating slot goes to the target (the source ASKs for keys it does not have).
      client.set(tag + ":new", "during");
      assertThat(migration.keysOnTarget()).isEqualTo(101);
      assertThat(migration.keysOnSource()).isEqualTo(150);

      migration.finish();
      assertThat(cluster.nodeForSlot(slot)).isEqualTo(target);
      try (Jedis s = cluster.admin(source); Jedis t = cluster.admin(target)) {
        assertThat(s.clusterCountKeysInSlot(slot)).isZero();
        assertThat(t.clusterCountKeysInSlot(slot)).isEqualTo(251);
      }
      // The client's slot map is stale: the source answers MOVED and the client goes to the target.
      for (int i = 0; i < 250; i++) {
        assertThat(client.get(tag + ":k" + i)).isEqualTo("v" + i);
      }
      client.set(tag + ":after", "moved");
      try (Jedis t = cluster.admin(target)) {
        assertThat(t.get(tag + ":after")).isEqualTo("moved");
      }
    }
    cluster.migrateSlot(slot, source);
    assertThat(cluster.nodeForSlot(slot)).isEqualTo(source);
    try (Jedis s = cluster.admin(source)) {
      assertThat(s.clusterCountKeysInSlot(slot)).isEqualTo(252);
    }
  }
}
