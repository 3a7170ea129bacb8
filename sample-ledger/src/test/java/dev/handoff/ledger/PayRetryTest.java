package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code pay} through a database that fails its transactions for a while (a trigger refuses every payment): it tries
 * each failed batch again, creates every payment once, and says how many it created if it gives up.
 */
@HandoffTest
class PayRetryTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  PayRetryTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void aFailedBatchIsTriedAgainAndEveryPaymentIsCreatedOnce() throws Exception {
    assertThat(t.cli("pay", "--count", "1").exit()).isZero();
    long before = env.queryLong("SELECT count(*) FROM payment");
    refusePayments();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CompletableFuture<Integer> pay = CompletableFuture.supplyAsync(() ->
        LedgerCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), args("pay", "--count", "250")));

    try {
      ConsumerTestKit.await("pay trying a failed batch again, or ending", Duration.ofSeconds(30),
          () -> err.toString().contains("trying the batch again") || pay.isDone());
      assertThat(err.toString()).contains("trying the batch again");
    } finally {
      acceptPayments();
    }

    assertThat(pay.get(60, TimeUnit.SECONDS)).as("exit; stderr %s", err).isZero();
    assertThat(out.toString()).contains("created 250 payments").containsPattern("\\d+ batch transaction\\(s\\) failed"
        + " and were tried again");
    assertThat(env.queryLong("SELECT count(*) FROM payment")).isEqualTo(before + 250);
    assertThat(env.queryLong("SELECT count(*) FROM outbox")).as("one message per payment").isEqualTo(before + 250);
  }

  @Test
  void aPayThatGivesUpSaysHowManyItCreated() {
    assertThat(t.cli("pay", "--count", "1").exit()).isZero();
    long before = env.queryLong("SELECT count(*) FROM payment");
    refusePayments();
    try {
      LedgerTestSupport.Run r = t.cli("pay", "--count", "5", "--retry-for", "0s");
      assertThat(r.exit()).isNotZero();
      assertThat(r.err().lines().filter(l -> l.startsWith("sample-ledger: ")).toList()).singleElement().asString()
          .startsWith("sample-ledger: pay stopped after creating 0 of 5 payments; the last batch of 5 may or may not"
              + " have committed: could not create 5 payment(s): ERROR: the database refuses payments");
    } finally {
      acceptPayments();
    }
    assertThat(env.queryLong("SELECT count(*) FROM payment")).isEqualTo(before);
  }

  private void refusePayments() {
    env.execute("CREATE OR REPLACE FUNCTION refuse_payment() RETURNS trigger LANGUAGE plpgsql AS"
            + " $$ BEGIN RAISE EXCEPTION 'the database refuses payments'; END $$",
        "CREATE TRIGGER refuse_payment BEFORE INSERT ON payment FOR EACH ROW EXECUTE FUNCTION refuse_payment()");
  }

  private void acceptPayments() {
    env.execute("DROP TRIGGER refuse_payment ON payment");
  }

  private String[] args(String... command) {
    List<String> all = new ArrayList<>(List.of(command));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--schema", env.schema(), "--key-prefix", env.keyPrefix()));
    return all.toArray(String[]::new);
  }
}
