package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClusterClient;

/**
 * The ledger on a Redis Cluster, given only {@code --redis-cluster}: handoff.jar's {@code relay} and {@code status},
 * the sample's {@code consume} and {@code verify}, as processes, each payment charged once (the demo on a cluster is
 * ledger-demo's {@code DemoOnRedisClusterTest}).
 */
@HandoffTest
class LedgerOnRedisClusterTest {

  private static RedisCluster cluster;

  private final TestEnvironment env;

  LedgerOnRedisClusterTest(TestEnvironment env) {
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
  void payRelayConsumeStatusAndVerifyOnAClusterGivenOnlyItsSeeds() throws Exception {
    int payments = 2_000;
    CliProcess migrate = CliProcess.handoff("migrate", "--jdbc-url", env.postgres().jdbcUrl(), "--schema",
        env.schema());
    assertThat(migrate.waitFor(60)).as("migrate; stderr: %s", migrate.stderr()).isZero();
    List<CliProcess> running = new ArrayList<>();
    try {
      running.add(handoff("relay", "--topics", "payments:4", "--lease-ttl", "PT2S"));
      running.add(cli("consume", "--name", "cons-a", "--workers", "2"));
      CliProcess pay = cli("pay", "--count", Integer.toString(payments), "--rate", "2000");
      assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
          .until(() -> env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'") == payments);

      try (RedisClusterClient client = cluster.newClient()) {
        long entries = 0;
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          String key = StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
          // Redis's own count of entries ever added (the relay trims what the group finished, so XLEN shrinks)
          entries += Long.parseLong(client.hget(StreamFormat.relayKey(key), "added"));
          assertThat(client.xpending(key, "ledger").getTotal()).as("pending on %s", key).isZero();
        }
        assertThat(entries).as("one entry added per outbox row").isEqualTo(payments);
      }
      CliProcess status = handoff("status", "--topic", PaymentEvents.TOPIC);
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout()).contains("group ledger: backlog 0 (never delivered), pending 0 (delivered, not"
          + " acknowledged), oldest pending -, dead letters 0");
      for (CliProcess p : running) {
        p.process.destroy();
      }
      for (CliProcess p : running) {
        assertThat(p.waitFor(30)).as("exit after SIGTERM; stderr: %s", p.stderr()).isZero();
      }
      CliProcess verify = cli("verify");
      assertThat(verify.waitFor(60)).as("verify; stdout: %s", verify.stdout()).isZero();
      assertThat(verify.stdout()).contains("verify ledger 'ledger': PASS").containsPattern("missing\\s+0")
          .containsPattern("duplicated\\s+0");
    } finally {
      for (CliProcess p : running) {
        p.process.destroyForcibly();
      }
    }
  }

  private String seeds() {
    return cluster.seeds().stream().map(Object::toString).collect(Collectors.joining(","));
  }

  private CliProcess cli(String... args) throws Exception {
    return CliProcess.start(withCluster(args));
  }

  /** The operator's {@code handoff <args>} ({@code relay}, {@code status}) on the cluster. */
  private CliProcess handoff(String... args) throws Exception {
    return CliProcess.handoff(withCluster(args));
  }

  private String[] withCluster(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-cluster", seeds(), "--schema", env.schema(),
        "--key-prefix", env.keyPrefix()));
    return all.toArray(String[]::new);
  }
}
