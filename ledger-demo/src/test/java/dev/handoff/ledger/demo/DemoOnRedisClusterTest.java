package dev.handoff.ledger.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClusterClient;

/**
 * The demo on a Redis Cluster, given only {@code --redis-cluster} (moved here from sample-ledger's
 * {@code LedgerOnRedisClusterTest} with the demo): it passes, and the relays added one entry per outbox row.
 */
@HandoffTest
class DemoOnRedisClusterTest {

  private static RedisCluster cluster;

  private final TestEnvironment env;

  DemoOnRedisClusterTest(TestEnvironment env) {
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
  void theDemoPassesOnAClusterGivenOnlyItsSeeds() throws Exception {
    String schema = env.schema() + "_demo";
    String prefix = env.keyPrefix() + "-demo";
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = DemoCommand.execute(new PrintWriter(out), new PrintWriter(err),
        "--payments", "1000", "--jdbc-url", env.postgres().jdbcUrl(), "--redis-cluster", seeds(), "--schema",
        schema, "--key-prefix", prefix);
    String report = out.toString();
    assertThat(exit).as("exit code; output:%n%s%nstderr:%n%s", report, err).isZero();
    assertThat(report).contains("FAULT relay-1 killed after XADD", "verify ledger 'ledger': PASS");
    long outboxRows = env.queryLong("SELECT count(*) FROM " + schema + ".outbox");
    try (RedisClusterClient client = cluster.newClient()) {
      long entries = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        entries += Long.parseLong(client.hget(StreamFormat.relayKey(
            StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard)), "added"));
      }
      assertThat(entries).as("one entry added per outbox row, relay-1's re-sent batch included")
          .isEqualTo(outboxRows);
    }
    assertThat(env.queryLong("SELECT count(*) FROM " + schema + ".charge WHERE ledger = 'ledger'"))
        .as("every payment but the poison one charged once").isEqualTo(999);
  }

  private String seeds() {
    return cluster.seeds().stream().map(Object::toString).collect(Collectors.joining(","));
  }
}
