package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.outbox.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The command line as an operator runs it: {@code migrate}, {@code pay}, {@code relay}, two {@code consume} and
 * {@code verify} as separate processes against one PostgreSQL and one Redis, with one consumer process SIGKILLed
 * midway and restarted under the same name.
 */
@HandoffTest
class LedgerCliProcessTest {

  private static final int PAYMENTS = 3_000;
  private static final int POISON_EVERY = 1_000;

  private final TestEnvironment env;

  LedgerCliProcessTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void payRelayConsumeAndVerifyAsProcessesWithAConsumerSigkilledMidway() throws Exception {
    // given
    assertThat(cli("migrate").waitFor(60)).isZero();
    CliProcess relay = cli("relay", "--lease-ttl", "PT2S");
    CliProcess consumerA = consumer("cons-a");
    CliProcess consumerB = consumer("cons-b");
    List<CliProcess> running = new ArrayList<>(List.of(relay, consumerA, consumerB));
    try {
      // when: payments arrive at 1,000/s and consumer A is killed once a third of them are charged
      CliProcess pay = cli("pay", "--count", Integer.toString(PAYMENTS), "--rate", "1000", "--poison-every",
          Integer.toString(POISON_EVERY));
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> charges() >= PAYMENTS / 3);
      consumerA.process.destroyForcibly(); // SIGKILL: its batch in flight and its pending entries are left behind
      assertThat(consumerA.waitFor(10)).isNotZero();
      long chargesAtKill = charges();
      CliProcess restartedA = consumer("cons-a");
      running.add(restartedA);
      assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();
      assertThat(pay.stdout()).contains("created 3,000 payments (3 poison)");

      // then: everything is charged once, the poison payments are dead letters, nothing is left pending
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() ->
          charges() == PAYMENTS - PAYMENTS / POISON_EVERY
              && env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == 3
              && pendingAndBacklogZero());
      assertThat(chargesAtKill).isLessThan(PAYMENTS);

      // SIGTERM: each long-running process drains and exits 0
      for (CliProcess p : List.of(relay, consumerB, restartedA)) {
        p.process.destroy();
      }
      for (CliProcess p : List.of(relay, consumerB, restartedA)) {
        assertThat(p.waitFor(30)).as("exit after SIGTERM; stderr: %s", p.stderr()).isZero();
      }
      assertThat(restartedA.stdout()).contains("ledger consumer cons-a stopped");

      CliProcess verify = cli("verify");
      CliProcess verifyJson = cli("verify", "--json");
      CliProcess status = cli("status");
      CliProcess dlq = cli("dlq", "list");
      assertThat(verify.waitFor(60)).as("verify; stdout: %s stderr: %s", verify.stdout(), verify.stderr()).isZero();
      assertThat(verify.stdout()).contains("verify ledger 'ledger': PASS").containsPattern("missing\\s+0")
          .containsPattern("duplicated\\s+0").containsPattern("dead letters\\s+3");
      assertThat(verifyJson.waitFor(60)).isZero();
      assertThat(verifyJson.stdout()).contains("\"passed\":true", "\"payments\":3000", "\"charges\":2997",
          "\"missing\":0", "\"duplicated\":0", "\"orphans\":0", "\"dead_letters\":3");
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout()).contains("group ledger: backlog 0 (never delivered), pending 0 (delivered, not"
          + " acknowledged), dead letters 3");
      assertThat(dlq.waitFor(60)).isZero();
      assertThat(dlq.stdout()).contains("the ledger refuses poison payment").hasLineCount(4);
    } finally {
      for (CliProcess p : running) {
        p.process.destroyForcibly();
      }
    }
  }

  private CliProcess consumer(String name) throws Exception {
    return cli("consume", "--name", name, "--workers", "2", "--min-idle", "PT2S", "--max-deliveries", "3");
  }

  private CliProcess cli(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--schema", env.schema(), "--key-prefix", env.keyPrefix()));
    return CliProcess.start(all.toArray(String[]::new));
  }

  private long charges() {
    return env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
  }

  private boolean pendingAndBacklogZero() {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (env.redis().xpending(key, "ledger").getTotal() != 0) {
        return false;
      }
      var group = env.redis().xinfoGroups(key).stream().filter(g -> g.getName().equals("ledger")).findFirst();
      var last = env.redis().xrevrange(key, "+", "-", 1);
      if (group.isEmpty() || last.isEmpty() || !group.get().getLastDeliveredId().equals(last.get(0).getID())) {
        return false;
      }
    }
    return true;
  }
}
