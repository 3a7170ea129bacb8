package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import java.io.File;
import java.nio.file.Files;
import java.sql.Connection;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClusterClient;

/** handoff.jar on a Redis Cluster: the relay process with --redis-cluster, and status naming each shard's node. */
@HandoffTest
class ClusterCommandsTest {

  private static final TopicConfig ORDERS = TopicConfig.of("orders").withShards(8);
  private static RedisCluster cluster;

  private final TestEnvironment env;

  ClusterCommandsTest(TestEnvironment env) {
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

  private String seeds() {
    return cluster.seeds().stream().map(Object::toString).collect(Collectors.joining(","));
  }

  @Test
  void aRelayProcessPublishesEveryShardToItsMasterAndStatusNamesEachShardsNode() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(ORDERS).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 400; i++) {
        outbox.append(tx, Message.builder("orders", "order.placed").key("order-" + i).payload("p" + i).build());
      }
      tx.commit();
    }
    File log = Files.createTempFile("cluster-relay", ".log").toFile();
    Process relay = HandoffProcess.relay("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema(),
        "--redis-cluster", seeds(), "--key-prefix", env.keyPrefix(), "--topics", "orders:8", "--lease-ttl", "PT2S")
        .redirectErrorStream(true).redirectOutput(log).start();
    try (RedisClusterClient client = cluster.newClient()) {
      await().atMost(Duration.ofSeconds(60))
          .until(() -> env.queryLong("select count(*) from outbox where published_at is null") == 0);
      relay.destroy();
      assertThat(relay.waitFor(20, TimeUnit.SECONDS)).isTrue();
      assertThat(relay.exitValue()).as(Files.readString(log.toPath())).isZero();

      long entries = 0;
      Set<Object> masters = new java.util.HashSet<>();
      for (int shard = 0; shard < 8; shard++) {
        String key = StreamFormat.streamKey(env.keyPrefix(), "orders", shard);
        long length = client.xlen(key);
        assertThat(length).as("shard %d", shard)
            .isEqualTo(env.queryLong("select count(*) from outbox where topic = 'orders' and shard = ?", shard));
        entries += length;
        masters.add(cluster.nodeForKey(key));
      }
      assertThat(entries).isEqualTo(400);
      assertThat(masters).as("the 8 shards land on all 3 masters").hasSize(3);

      HandoffCommandTest.Run status = HandoffCommandTest.run("status", "--jdbc-url", env.postgres().jdbcUrl(),
          "--schema", env.schema(), "--redis-cluster", seeds(), "--key-prefix", env.keyPrefix(), "--topic",
          "orders", "--json");
      assertThat(status.exit()).as("stderr %s", status.err()).isZero();
      for (int shard = 0; shard < 8; shard++) {
        String key = StreamFormat.streamKey(env.keyPrefix(), "orders", shard);
        assertThat(status.out()).contains("\"key\":\"" + key + "\",\"exists\":true,\"length\":"
            + client.xlen(key) + ",");
        assertThat(status.out()).contains("\"node\":\"" + cluster.nodeForKey(key) + "\",\"slot\":"
            + redis.clients.jedis.util.JedisClusterCRC16.getSlot(key) + "}");
      }
      HandoffCommandTest.Run text = HandoffCommandTest.run("status", "--jdbc-url", env.postgres().jdbcUrl(),
          "--schema", env.schema(), "--redis-cluster", seeds(), "--key-prefix", env.keyPrefix());
      assertThat(text.out()).contains("node (slot)").contains(cluster.nodeForKey(
          StreamFormat.streamKey(env.keyPrefix(), "orders", 0)) + " (");
    } finally {
      relay.destroyForcibly();
    }
  }

  @Test
  void aSeedThatIsNotHostAndPortIsOneLine() {
    HandoffCommandTest.Run r = HandoffCommandTest.run("status", "--jdbc-url", env.postgres().jdbcUrl(),
        "--schema", env.schema(), "--redis-cluster", "cache-1");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).containsExactly("handoff: --redis-cluster needs host:port seeds, was 'cache-1'");
  }
}
