package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/** The relay and a stream consumer on a Redis Cluster under exactly their RedisAcl rules, with nothing refused. */
@HandoffTest
class ClusterAclTest {

  private static final TopicConfig ORDERS = TopicConfig.of("orders").withShards(6);
  private static RedisCluster cluster;

  private final TestEnvironment env;

  ClusterAclTest(TestEnvironment env) {
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
  void theRelayAndAStreamConsumerRunOnTheClusterUnderTheirOwnRulesAlone() throws Exception {
    for (HostAndPort node : cluster.seeds()) {
      try (Jedis admin = cluster.admin(node)) {
        admin.aclSetUser("relay", ("on >relay-pw " + RedisAcl.relay(env.keyPrefix())).split(" "));
        admin.aclSetUser("billing", ("on >billing-pw " + RedisAcl.streamConsumer(env.keyPrefix())).split(" "));
        admin.aclLogReset();
      }
    }
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(ORDERS).build();
    Set<UUID> appended = new HashSet<>();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 60; i++) {
        appended.add(outbox.append(tx, Message.builder("orders", "order.placed").key("o-" + i).payload("p").build())
            .messageId());
      }
      tx.commit();
    }
    Set<UUID> handled = java.util.concurrent.ConcurrentHashMap.newKeySet();
    try (Relay relay = Relay.builder(env.dataSource(), login("relay", "relay-pw")).schema(env.schema())
            .keyPrefix(env.keyPrefix())
            .topic(ORDERS).build();
        StreamConsumer consumer = StreamConsumer.builder(env.dataSource(), login("billing", "billing-pw"))
            .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(ORDERS).group("billing").batchSize(100)
            .handler((tx, m) -> handled.add(m.messageId())).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(60);
      int handledCount = 0;
      for (int poll = 0; poll < 50 && handledCount < 60; poll++) {
        handledCount += consumer.pollOnce().handled();
      }
      assertThat(handledCount).isEqualTo(60);
      assertThat(handled).isEqualTo(appended);
    }
    try (RedisClusterClient admin = cluster.newClient()) {
      for (int shard = 0; shard < ORDERS.shards(); shard++) {
        assertThat(admin.xpending(dev.handoff.core.StreamFormat.streamKey(env.keyPrefix(), "orders", shard),
            "billing").getTotal()).as("pending on shard %d", shard).isZero();
      }
    }
    for (HostAndPort node : cluster.seeds()) {
      try (Jedis admin = cluster.admin(node)) {
        List<?> log = admin.aclLog();
        assertThat(log).as("ACL LOG of %s", node).isEmpty();
      }
    }
  }

  /** The cluster, every master a seed, logged in as {@code user}. */
  private RedisConnectionSpec login(String user, String password) {
    HostAndPort first = cluster.masters().get(0);
    return RedisConnectionSpec.builder("redis://" + user + ":" + password + "@" + first).cluster(cluster.seeds())
        .build();
  }
}