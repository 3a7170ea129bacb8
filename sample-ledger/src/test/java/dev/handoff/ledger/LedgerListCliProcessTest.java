package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.outbox.ListFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The command line on the list transport as an operator runs it: {@code relay --transport list}, two
 * {@code consume --transport list} and {@code pay}, {@code verify}, {@code status} as separate processes against one
 * PostgreSQL and one Redis, with one consumer process SIGKILLed midway and restarted under the same name.
 */
@HandoffTest
class LedgerListCliProcessTest {

  private static final int PAYMENTS = 2_000;
  private static final int POISON_EVERY = 1_000;

  private final TestEnvironment env;

  LedgerListCliProcessTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void relayAndConsumeOnListsAsProcessesWithAConsumerSigkilledMidway() throws Exception {
    // given
    assertThat(cli("migrate").waitFor(60)).isZero();
    CliProcess relay = cli("relay", "--transport", "list", "--list-capacity", "200", "--lease-ttl", "PT2S");
    CliProcess consumerA = consumer("cons-a");
    CliProcess consumerB = consumer("cons-b");
    List<CliProcess> running = new ArrayList<>(List.of(relay, consumerA, consumerB));
    try {
      // when: payments arrive at 1,000/s and consumer A is killed once a third of them are charged
      CliProcess pay = cli("pay", "--count", Integer.toString(PAYMENTS), "--rate", "1000", "--poison-every",
          Integer.toString(POISON_EVERY));
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> charges() >= PAYMENTS / 3);
      consumerA.process.destroyForcibly(); // SIGKILL: its processing lists stay, its heartbeats stop
      assertThat(consumerA.waitFor(10)).isNotZero();
      long chargesAtKill = charges();
      CliProcess restartedA = consumer("cons-a"); // same name: handles what its processing lists hold at once
      running.add(restartedA);
      assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();

      // then: everything is charged once, the poison payments are dead letters, the lists are empty
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
          charges() == PAYMENTS - PAYMENTS / POISON_EVERY
              && env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == 2
              && env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0
              && listsEmpty());
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
      CliProcess status = cli("status");
      CliProcess naive = cli("consume", "--transport", "list", "--naive");
      assertThat(verify.waitFor(60)).as("verify; stdout: %s stderr: %s", verify.stdout(), verify.stderr()).isZero();
      assertThat(verify.stdout()).contains("verify ledger 'ledger': PASS").containsPattern("missing\\s+0")
          .containsPattern("duplicated\\s+0").containsPattern("dead letters\\s+2");
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout()).contains("lists, group ledger: waiting 0 (pushed, not taken), in processing 0"
          + " (taken, not finished), outbox backlog 0 (committed, not pushed), dead letters 2");
      assertThat(naive.waitFor(60)).isEqualTo(2);
      assertThat(naive.stderr()).contains("--naive runs on streams only");
      long pushed = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
        pushed += Long.parseLong(env.redis().hget(ListFormat.relayKey(list), "added"));
      }
      assertThat(pushed).as("nothing pushed twice").isEqualTo(PAYMENTS);
    } finally {
      for (CliProcess p : running) {
        p.process.destroyForcibly();
      }
    }
  }

  private boolean listsEmpty() {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (env.redis().llen(list) != 0) {
        return false;
      }
      for (String processing : env.redis().hkeys(ListFormat.consumersKey(list))) {
        if (env.redis().llen(processing) != 0) {
          return false;
        }
      }
    }
    return true;
  }

  private CliProcess consumer(String name) throws Exception {
    return cli("consume", "--transport", "list", "--name", name, "--workers", "2", "--min-idle", "PT2S",
        "--max-deliveries", "3");
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
}
