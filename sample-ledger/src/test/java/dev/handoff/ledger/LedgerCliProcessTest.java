package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The command lines as an operator runs them, once per transport ({@link LedgerCliProcessOnStreamsTest},
 * {@link LedgerCliProcessOnListsTest}): handoff.jar's {@code migrate} and {@code relay}, the ledger's {@code pay},
 * two {@code consume} and {@code verify}, then handoff.jar's {@code status} and {@code dlq list}, as separate
 * processes against one PostgreSQL and one Redis, with one consumer process SIGKILLed midway and restarted under the
 * same name.
 */
@HandoffTest
abstract class LedgerCliProcessTest {

  private static final int POISON_EVERY = 1_000;

  private final TestEnvironment env;
  private final Transport transport;
  /** 3,000 on streams, 2,000 on lists. */
  private final int payments;
  private final int poison;

  LedgerCliProcessTest(TestEnvironment env, Transport transport, int payments) {
    this.env = env;
    this.transport = transport;
    this.payments = payments;
    this.poison = payments / POISON_EVERY;
  }

  @Test
  void payRelayConsumeAndVerifyAsProcessesWithAConsumerSigkilledMidway() throws Exception {
    // given
    CliProcess migrate = handoff("migrate");
    assertThat(migrate.waitFor(60)).as("migrate; stderr: %s", migrate.stderr()).isZero();
    CliProcess relay = transport == Transport.LIST
        ? handoff("relay", "--topics", "payments:4", "--transport", "list", "--list-capacity", "200", "--lease-ttl",
            "PT2S")
        : handoff("relay", "--topics", "payments:4", "--lease-ttl", "PT2S");
    CliProcess consumerA = consumer("cons-a");
    CliProcess consumerB = consumer("cons-b");
    List<CliProcess> running = new ArrayList<>(List.of(relay, consumerA, consumerB));
    try {
      // when: payments arrive at 1,000/s and consumer A is killed once a third of them are charged
      CliProcess pay = cli("pay", "--count", Integer.toString(payments), "--rate", "1000", "--poison-every",
          Integer.toString(POISON_EVERY));
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .ignoreExceptions() // until the first of pay and consume has created the ledger's tables
          .until(() -> charges() >= payments / 3);
      // SIGKILL: its batch in flight and its pending entries (on lists: its processing lists) are left behind, and
      // on lists its heartbeats stop
      consumerA.process.destroyForcibly();
      assertThat(consumerA.waitFor(10)).isNotZero();
      long chargesAtKill = charges();
      CliProcess restartedA = consumer("cons-a"); // same name: handles what it left behind at once
      running.add(restartedA);
      assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();
      assertThat(pay.stdout()).contains(String.format("created %,d payments (%d poison)", payments, poison));

      // then: everything is charged once, the poison payments are dead letters, nothing is left pending or waiting
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() ->
          charges() == payments - poison
              && env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger'") == poison
              && env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0
              && (transport == Transport.LIST ? listsEmpty() : pendingAndBacklogZero()));
      assertThat(chargesAtKill).isLessThan(payments);

      // SIGTERM: each long-running process drains and exits 0. Each has said it runs first, which it does once its
      // SIGTERM handler is in place (the relay in its log): the restarted consumer may still be starting when the
      // others finished the work.
      await("running: relay").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> relay.stderr().contains("SIGTERM to stop"));
      for (CliProcess p : List.of(consumerB, restartedA)) {
        await("running: " + p).atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> p.stdout().contains("SIGTERM to stop"));
      }
      for (CliProcess p : List.of(relay, consumerB, restartedA)) {
        p.process.destroy();
      }
      for (CliProcess p : List.of(relay, consumerB, restartedA)) {
        assertThat(p.waitFor(30)).as("exit after SIGTERM; stderr: %s", p.stderr()).isZero();
      }
      assertThat(restartedA.stdout()).contains("ledger consumer cons-a stopped");

      CliProcess verify = cli("verify");
      CliProcess verifyJson = cli("verify", "--json");
      CliProcess status = handoff("status", "--topic", PaymentEvents.TOPIC);
      CliProcess dlq = handoff("dlq", "list", "--group", "ledger");
      assertThat(verify.waitFor(60)).as("verify; stdout: %s stderr: %s", verify.stdout(), verify.stderr()).isZero();
      assertThat(verify.stdout()).contains("verify ledger 'ledger': PASS").containsPattern("missing\\s+0")
          .containsPattern("duplicated\\s+0").containsPattern("dead letters\\s+" + poison);
      // and what the consumer processes counted and flushed (the killed one's last counts are lost with it)
      assertThat(verify.stdout()).containsPattern("(?m)^consumers +deliveries [\\d,]+, duplicates skipped [\\d,]+,"
          + " reclaimed [\\d,]+ \\(as the group's ledger consumers recorded them\\)$");
      assertThat(verifyJson.waitFor(60)).isZero();
      assertThat(verifyJson.stdout()).contains("\"passed\":true", "\"payments\":" + payments,
          "\"charges\":" + (payments - poison), "\"missing\":0", "\"duplicated\":0", "\"orphans\":0",
          "\"dead_letters\":" + poison)
          .containsPattern("\"consumer_counters\":\\{\"deliveries\":[1-9]\\d*,\"duplicates_skipped\":\\d+,"
              + "\"reclaimed\":\\d+}");
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout()).contains("outbox depth 0,", transport == Transport.LIST
          ? "list group ledger: waiting 0, in processing 0, dead letters " + poison
          : "group ledger: backlog 0 (never delivered), pending 0 (delivered, not acknowledged), oldest pending -,"
              + " dead letters " + poison);
      assertThat(dlq.waitFor(60)).as("dlq; stderr: %s", dlq.stderr()).isZero();
      assertThat(dlq.stdout()).contains("the ledger refuses poison payment",
          poison + " dead letters of group ledger: " + poison + " dead").hasLineCount(2 + poison);
      if (transport == Transport.LIST) {
        long pushed = 0;
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
          pushed += Long.parseLong(env.redis().hget(ListFormat.relayKey(list), "added"));
        }
        assertThat(pushed).as("nothing pushed twice").isEqualTo(payments);
      }
    } finally {
      for (CliProcess p : running) {
        p.process.destroyForcibly();
      }
    }
  }

  private CliProcess consumer(String name) throws Exception {
    List<String> args = new ArrayList<>(List.of("consume"));
    if (transport == Transport.LIST) {
      args.addAll(List.of("--transport", "list"));
    }
    args.addAll(List.of("--name", name, "--workers", "2", "--min-idle", "PT2S", "--max-deliveries", "3"));
    return cli(args.toArray(String[]::new));
  }

  /** The operator's {@code handoff <args>} as a process, with the options of its command. */
  private CliProcess handoff(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));
    if (args[0].equals("relay") || args[0].equals("status")) {
      all.addAll(List.of("--redis-url", env.redisUri().toString(), "--key-prefix", env.keyPrefix()));
    }
    return CliProcess.handoff(all.toArray(String[]::new));
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
}
