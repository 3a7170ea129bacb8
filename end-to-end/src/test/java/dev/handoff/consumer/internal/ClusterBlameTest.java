package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.SlotMigration;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.exceptions.JedisAskDataException;
import redis.clients.jedis.exceptions.JedisClusterException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisMovedDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * What a Redis Cluster answers while a slot moves or the cluster is down says nothing about a message: {@link Blame}
 * puts each of these real replies (from a real cluster, no hand-made exceptions) on the environment, so a handler
 * that meets one pauses its worker instead of counting a delivery. A message's own Redis errors stay its own.
 */
class ClusterBlameTest {

  private static final String SCRIPT = "return redis.call('GET', KEYS[1]) or redis.call('GET', KEYS[2]) or 0";

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
  void tryAgainFromAScriptWhoseKeysASlotMigrationSplitIsTheEnvironments() {
    String a = "blame:{tryagain}:a";
    String b = "blame:{tryagain}:b";
    int slot = JedisClusterCRC16.getSlot(a);
    try (RedisClusterClient client = cluster.newClient()) {
      client.set(a, "1");
      client.set(b, "2");
      SlotMigration migration = cluster.beginMigration(slot, otherMaster(cluster.nodeForSlot(slot)));
      assertThat(migration.moveKeys(1)).isEqualTo(1); // one key on each side now

      Throwable e = catchThrowable(() -> client.eval(SCRIPT, List.of(a, b), List.of()));
      migration.finish();

      assertThat(e).isInstanceOf(JedisDataException.class).hasMessageStartingWith("TRYAGAIN");
      assertThat(Blame.of(e)).isEqualTo(Blame.ENVIRONMENT);
      assertThat(Blame.of(new RuntimeException("the handler wrapped it", e))).isEqualTo(Blame.ENVIRONMENT);
      assertThat(client.eval(SCRIPT, List.of(a, b), List.of())).isEqualTo("1"); // the same call, once settled
    }
  }

  @Test
  void askAndMovedThatReachTheCallerAreTheEnvironments() {
    String key = "blame:{redirect}:k";
    int slot = JedisClusterCRC16.getSlot(key);
    try (RedisClusterClient client = cluster.newClient()) {
      client.set(key, "v");
    }
    HostAndPort source = cluster.nodeForSlot(slot);
    HostAndPort target = otherMaster(source);
    SlotMigration migration = cluster.beginMigration(slot, target);
    migration.moveKeys(10);
    Throwable ask;
    try (Jedis direct = cluster.admin(source)) {
      ask = catchThrowable(() -> direct.get(key)); // a connection that follows nothing, as a pipeline's
    }
    migration.finish();
    Throwable moved;
    try (Jedis direct = cluster.admin(source)) {
      moved = catchThrowable(() -> direct.get(key));
    }

    assertThat(ask).isInstanceOf(JedisAskDataException.class);
    assertThat(moved).isInstanceOf(JedisMovedDataException.class);
    assertThat(Blame.of(ask)).isEqualTo(Blame.ENVIRONMENT);
    assertThat(Blame.of(moved)).isEqualTo(Blame.ENVIRONMENT);
  }

  @Test
  void aClientOutOfClusterAttemptsIsTheEnvironments() {
    String key = "blame:{attempts}:k";
    int slot = JedisClusterCRC16.getSlot(key);
    try (RedisClusterClient client = RedisClusterClient.builder().nodes(cluster.seeds()).maxAttempts(1)
        .clientConfig(DefaultJedisClientConfig.builder().resp2().build()).build()) {
      client.set(key, "v"); // the client has its slot map now
      cluster.migrateSlot(slot, otherMaster(cluster.nodeForSlot(slot)));

      Throwable e = catchThrowable(() -> client.get(key)); // its map is stale: MOVED, and no attempt left

      assertThat(e).isInstanceOf(JedisClusterOperationException.class);
      assertThat(Blame.of(e)).isEqualTo(Blame.ENVIRONMENT);
    }
  }

  @Test
  void clusterDownIsTheEnvironments() {
    String key = "blame:{down}:k";
    int slot = JedisClusterCRC16.getSlot(key);
    HostAndPort owner = cluster.nodeForSlot(slot);
    try (RedisClusterClient client = cluster.newClient(); Jedis admin = cluster.admin(owner)) {
      client.set(key, "v");
      admin.clusterDelSlots(slot); // the owner serves the slot no more: it answers CLUSTERDOWN for its keys
      Throwable e;
      try {
        e = catchThrowable(() -> client.get(key));
      } finally {
        admin.clusterAddSlots(slot);
      }
      ConsumerTestKit.await("the owner serves slot " + slot + " again", Duration.ofSeconds(20),
          () -> admin.clusterInfo().contains("cluster_state:ok") && "v".equals(client.get(key)));

      assertThat(e).isInstanceOf(JedisClusterException.class).hasMessageStartingWith("CLUSTERDOWN");
      assertThat(Blame.of(e)).isEqualTo(Blame.ENVIRONMENT);
    }
  }

  @Test
  void aMessagesOwnRedisErrorsStayTheMessages() {
    try (RedisClusterClient client = cluster.newClient()) {
      client.set("blame:{own}:string", "v");
      Throwable wrongType = catchThrowable(() -> client.lpush("blame:{own}:string", "x"));
      Throwable crossSlot = catchThrowable(() -> client.eval(SCRIPT, List.of("blame:{own}:a", "blame:{other}:b"),
          List.of()));

      assertThat(wrongType).isInstanceOf(JedisDataException.class).hasMessageStartingWith("WRONGTYPE");
      assertThat(Blame.of(wrongType)).isEqualTo(Blame.MESSAGE);
      // keys of two slots in one script: the handler's mistake, refused by the client the same way every time
      assertThat(crossSlot).isInstanceOf(JedisClusterOperationException.class)
          .hasMessageContaining("multiple hash slots");
      assertThat(Blame.of(crossSlot)).isEqualTo(Blame.MESSAGE);
    }
  }

  private static HostAndPort otherMaster(HostAndPort master) {
    return cluster.masters().stream().filter(m -> !m.equals(master)).findFirst().orElseThrow();
  }
}
