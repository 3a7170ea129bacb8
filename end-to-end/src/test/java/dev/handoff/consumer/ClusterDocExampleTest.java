package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClusterClient;

/**
 * The Java example of docs/scaling.md ("Running on a cluster"), line for line (DocExamplesTest checks it), run as
 * written on the test cluster of three masters: handoff's default schema and key prefix, in a database of the test's
 * own. The eight shards land on every master, and each payment is charged once.
 */
@HandoffTest(migrate = false)
class ClusterDocExampleTest {

  private static RedisCluster cluster;

  private final TestEnvironment env;
  private DocLedger ledger;

  ClusterDocExampleTest(TestEnvironment env) {
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
  void aRelayAndAConsumerOnTheClusterChargeEachPaymentOnce() throws Exception {
    DataSource dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    ledger = new DocLedger(dataSource, HandoffMigrations.DEFAULT_SCHEMA);
    List<HostAndPort> masters = cluster.masters();
    String redis1 = masters.get(0).toString();
    String redis2 = masters.get(1).toString();
    String redis3 = masters.get(2).toString();
    List<UUID> ids = ledger.pay(TopicConfig.of("payments").withShards(8), 40);

    Set<HostAndPort> seeds = Set.of(HostAndPort.from(redis1), HostAndPort.from(redis2), // "redis-1:7000", ...
        HostAndPort.from(redis3));
    TopicConfig payments = TopicConfig.of("payments").withShards(8);

    // One spec for every component: the seeds, login and TLS of the cluster.
    RedisConnectionSpec redis = RedisConnectionSpec.builder("redis://" + redis1).cluster(seeds).build();
    Relay relay = Relay.builder(dataSource, redis).topic(payments).build();   // .listTransport(capacity) for lists
    try (relay) {
      relay.start();

      StreamConsumer consumer = StreamConsumer.builder(dataSource, redis)
          .topic(payments).group("billing").consumerName("billing-1")
          .handler((tx, message) -> charge(tx, message.key()))
          .build();
      try (consumer) {
        consumer.start();
        ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(60));
        ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(60));
      }

      Set<HostAndPort> owners = new HashSet<>();
      long added = 0;
      try (RedisClusterClient check = cluster.newClient()) {
        for (int shard = 0; shard < 8; shard++) {
          String key = StreamFormat.streamKey("handoff", "payments", shard);
          owners.add(cluster.nodeForKey(key));
          added += (Long) check.xinfoStream(key).getStreamInfo().get("entries-added");
        }
      }
      assertThat(owners).as("the shards' masters").containsExactlyInAnyOrderElementsOf(masters);
      assertThat(added).isEqualTo(40);
    }
    assertThat(ledger.charges("payments")).isEqualTo(40);
    assertThat(ledger.doubleCharges("payments")).isZero();
  }

  /** The example's handler: charges the payment the message's key names. */
  private void charge(Connection tx, String paymentId) throws SQLException {
    ledger.charge(tx, "payments", paymentId);
  }
}
