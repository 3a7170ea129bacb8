package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.exceptions.JedisBroadcastException;
import redis.clients.jedis.exceptions.JedisClusterException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisMovedDataException;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * What Jedis 8.0.2's cluster client does on the cluster errors handoff must handle, measured on the real servers:
 * which exception CLUSTERDOWN and TRYAGAIN raise and whether they are retried, how MOVED is retried, what a
 * pipeline does, and how a blocking XREADGROUP uses the connections.
 */
class ClusterClientProbeTest {

  private static RedisCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  /** TRYAGAIN: a multi-key command (or script) whose keys are split between the two sides of a migration. */
  @Test
  void tryAgainIsThrownAtOnceAsAPlainJedisDataExceptionFromAScript() {
    String a = "{probe-try}:a";
    String b = "{probe-try}:b";
    int slot = JedisClusterCRC16.getSlot(a);
    HostAndPort source = cluster.nodeForSlot(slot);
    HostAndPort target = otherMaster(source);
    try (RedisClusterClient client = cluster.newClient()) {
      client.set(a, "1");
      client.set(b, "2");
      SlotMigration migration = cluster.beginMigration(slot, target);
      assertThat(migration.moveKeys(1)).isEqualTo(1);
      long rejectedBefore = rejectedCalls("mget");
      long evalRejectedBefore = rejectedCalls("eval");
      // The cluster client splits MGET by slot and runs the parts as a broadcast: the error comes back wrapped.
      assertThatThrownBy(() -> client.mget(a, b))
          .isExactlyInstanceOf(JedisBroadcastException.class)
          .hasMessageContaining("first error: TRYAGAIN Multiple keys request during rehashing of slot");
      assertThat(rejectedCalls("mget") - rejectedBefore).as("attempts the client made").isEqualTo(1);
      // A script is refused the same way: the relay's publish script with its stream and relay keys split.
      assertThatThrownBy(() -> client.eval("return redis.call('GET', KEYS[1])", List.of(a, b), List.of()))
          .isExactlyInstanceOf(JedisDataException.class)
          .hasMessageStartingWith("TRYAGAIN");
      assertThat(rejectedCalls("eval") - evalRejectedBefore).as("attempts the client made").isEqualTo(1);
      migration.finish();
      assertThat(client.mget(a, b)).containsExactly("1", "2");
    }
  }

  /**
   * CLUSTERDOWN: every node forgot who owns a slot, so (with full coverage required) the cluster is down. The owner's
   * replica is frozen meanwhile: it announces its master's slots as it knows them, and a node that already forgot the
   * slot takes it back from such a ping (an unassigned slot goes to whoever claims it), so the slot can only be
   * forgotten everywhere while nobody who still knows it gossips. The owner forgets it first, then the others.
   */
  @Test
  void clusterDownIsAJedisClusterExceptionThrownAtOnce() {
    String key = "{probe-down}:k";
    int slot = JedisClusterCRC16.getSlot(key);
    HostAndPort owner = cluster.nodeForSlot(slot);
    HostAndPort ownersReplica = cluster.replicaOf(owner);
    List<HostAndPort> others = new ArrayList<>(cluster.seeds());
    others.remove(ownersReplica);
    others.remove(owner);
    others.add(0, owner);
    try (RedisClusterClient client = cluster.newClient()) {
      client.set(key, "v");
      cluster.freeze(ownersReplica);
      try {
        for (HostAndPort node : others) {
          try (Jedis jedis = cluster.admin(node)) {
            jedis.clusterDelSlots(slot);
          }
        }
        Waits.until("every node but the frozen replica reports cluster_state:fail", Duration.ofSeconds(30),
            () -> others.stream().allMatch(n -> clusterState(n).equals("fail")));
        long rejectedBefore = rejectedCalls("get", others);
        assertThatThrownBy(() -> client.get(key))
            .isExactlyInstanceOf(JedisClusterException.class)
            .hasMessageStartingWith("CLUSTERDOWN");
        assertThat(rejectedCalls("get", others) - rejectedBefore).as("attempts the client made").isEqualTo(1);
      } finally {
        // Given back whatever happened above, so that the class's other tests find the cluster whole.
        try (Jedis jedis = cluster.admin(owner)) {
          jedis.clusterAddSlots(slot);
        } catch (JedisDataException alreadyOwned) {
          // The owner never forgot it (a failure before its DELSLOTS).
        }
        cluster.thaw(ownersReplica);
      }
      Waits.until("every node reports cluster_state:ok again", Duration.ofSeconds(30),
          () -> cluster.seeds().stream().allMatch(n -> clusterState(n).equals("ok")
              && cluster.nodeForSlot(slot).equals(owner)));
      assertThat(client.get(key)).isEqualTo("v");
    }
  }

  /** MOVED is followed within maxAttempts (default 5); with one attempt, a stale slot map fails the call. */
  @Test
  void movedIsFollowedWithinMaxAttemptsAndAPipelineDoesNotFollowIt() {
    String key = "{probe-moved}:k";
    int slot = JedisClusterCRC16.getSlot(key);
    HostAndPort source = cluster.nodeForSlot(slot);
    HostAndPort target = otherMaster(source);
    try (RedisClusterClient oneAttempt = RedisClusterClient.builder().nodes(cluster.seeds())
            .clientConfig(DefaultJedisClientConfig.builder().resp2().build()).maxAttempts(1).build();
        RedisClusterClient defaults = cluster.newClient()) {
      oneAttempt.set(key, "v");
      assertThat(defaults.get(key)).isEqualTo("v");
      cluster.migrateSlot(slot, target);

      // The pipeline sends each command to the node its (stale) slot map names and hands back the raw redirection.
      ClusterPipeline pipeline = defaults.pipelined();
      Response<String> stale = pipeline.get(key);
      pipeline.sync();
      assertThatThrownBy(stale::get).isExactlyInstanceOf(JedisMovedDataException.class)
          .hasMessageStartingWith("MOVED " + slot + " " + target.getHost() + ":" + target.getPort());
      pipeline.close();

      assertThatThrownBy(() -> oneAttempt.get(key))
          .isExactlyInstanceOf(JedisClusterOperationException.class)
          .hasMessage("No more cluster attempts left.")
          .cause().isExactlyInstanceOf(JedisMovedDataException.class);
      // The MOVED refreshed the slot map, so the next call goes straight to the new owner.
      assertThat(oneAttempt.get(key)).isEqualTo("v");
      assertThat(defaults.get(key)).isEqualTo("v");

      // A pipeline over keys of all three masters: one connection per node, replies in command order.
      List<String> keys = new ArrayList<>();
      for (int i = 0; keys.size() < 30; i++) {
        keys.add("probe-pipe:" + i);
      }
      try (ClusterPipeline p = defaults.pipelined()) {
        List<Response<String>> sets = keys.stream().map(k -> p.set(k, k)).toList();
        List<Response<String>> gets = keys.stream().map(p::get).toList();
        p.sync();
        assertThat(sets).allSatisfy(r -> assertThat(r.get()).isEqualTo("OK"));
        assertThat(gets.stream().map(Response::get).toList()).isEqualTo(keys);
      }
      assertThat(keys.stream().map(cluster::nodeForKey).distinct().count()).isEqualTo(3);
    }
  }

  /** XREADGROUP BLOCK on one key runs on the owner and holds one of its pooled connections for the whole call. */
  @Test
  void aBlockingReadGroupRunsOnTheOwnerAndHoldsOneConnectionUntilItReturns() throws Exception {
    String stream = "handoff:{probe-block:0}";
    HostAndPort owner = cluster.nodeForKey(stream);
    try (RedisClusterClient client = cluster.newClient()) {
      client.xgroupCreate(stream, "g", StreamEntryID.XGROUP_LAST_ENTRY, true);
      int before = client.getClusterNodes().get(owner.toString()).getNumActive();
      CompletableFuture<List<Map.Entry<String, List<StreamEntry>>>> read = CompletableFuture.supplyAsync(
          // Blocks until the entry below arrives, however long the machine takes to get there.
          () -> client.xreadGroup("g", "c1", XReadGroupParams.xReadGroupParams().block(60_000).count(1),
              Map.of(stream, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY)));
      Waits.until("the read blocks on " + owner, Duration.ofSeconds(10), () -> blockedReads(owner) == 1);
      assertThat(client.getClusterNodes().get(owner.toString()).getNumActive()).isEqualTo(before + 1);
      try (Jedis jedis = cluster.admin(owner)) {
        jedis.xadd(stream, StreamEntryID.NEW_ENTRY, Map.of("f", "v"));
      }
      List<Map.Entry<String, List<StreamEntry>>> reply = read.get(60, TimeUnit.SECONDS);
      assertThat(reply).hasSize(1);
      assertThat(reply.get(0).getValue()).hasSize(1);
      assertThat(client.getClusterNodes().get(owner.toString()).getNumActive()).isEqualTo(before);

      // A block longer than the socket timeout (2 s by default) is no read timeout: Jedis waits for the reply.
      assertThat(client.xreadGroup("g", "c1", XReadGroupParams.xReadGroupParams().block(3000),
          Map.of(stream, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY))).isNull();
    }
  }

  private static HostAndPort otherMaster(HostAndPort master) {
    return cluster.masters().stream().filter(m -> !m.equals(master)).findFirst().orElseThrow();
  }

  private static String clusterState(HostAndPort node) {
    try (Jedis jedis = cluster.admin(node)) {
      return RedisCluster.field(jedis.clusterInfo(), "cluster_state");
    }
  }

  private static long blockedReads(HostAndPort node) {
    try (Jedis jedis = cluster.admin(node)) {
      return jedis.clientList().lines().filter(l -> l.contains("cmd=xreadgroup") && l.matches(".* flags=\\w*b\\w* .*"))
          .count();
    }
  }

  /** {@code rejected_calls} of {@code command} summed over every node ({@code INFO commandstats}, Redis 7). */
  private static long rejectedCalls(String command) {
    return rejectedCalls(command, cluster.seeds());
  }

  /** The {@code rejected_calls} of {@code command} summed over {@code nodes}. */
  private static long rejectedCalls(String command, Iterable<HostAndPort> nodes) {
    long sum = 0;
    for (HostAndPort node : nodes) {
      try (Jedis jedis = cluster.admin(node)) {
        String stats = RedisCluster.field(jedis.info("commandstats"), "cmdstat_" + command);
        for (String part : stats.split(",")) {
          if (part.startsWith("rejected_calls=")) {
            sum += Long.parseLong(part.substring("rejected_calls=".length()));
          }
        }
      }
    }
    return sum;
  }
}
