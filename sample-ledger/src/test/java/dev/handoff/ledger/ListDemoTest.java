package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.outbox.ListFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code demo --transport list} against the test servers (by URL): it exits 0 and every number of its report is the
 * database's (or the relay hashes').
 */
@HandoffTest
class ListDemoTest {

  private static final int PAYMENTS = 2_000;

  private final TestEnvironment env;

  ListDemoTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void demoOnListsExitsZeroAndItsReportAgreesWithTheDatabase() {
    // when
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), "demo", "--transport", "list",
        "--list-capacity", "300", "--payments", Integer.toString(PAYMENTS), "--jdbc-url", env.postgres().jdbcUrl(),
        "--redis-url", env.redisUri().toString(), "--schema", env.schema(), "--key-prefix", env.keyPrefix());

    // then
    String report = out.toString();
    assertThat(exit).as("exit code; output:%n%s%nstderr:%n%s", report, err).isZero();
    assertThat(report).contains("on Redis lists (capacity 300 per shard", "FAULT relay-1 killed after RPUSH",
        "killed after its batch committed, before LREM", "REPLAY on lists: a list keeps nothing once acknowledged",
        "naive consumer: not run on lists", "verify ledger 'ledger': PASS");
    long payments = count("SELECT count(*) FROM payment");
    long charges = count("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
    long deadLetters = count("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger' AND status = 'dead'");
    assertThat(payments).isEqualTo(PAYMENTS);
    assertThat(number(report, "^payments\\s+([\\d,]+)")).isEqualTo(payments);
    assertThat(number(report, "^charges\\s+([\\d,]+)")).isEqualTo(charges).isEqualTo(PAYMENTS - 1);
    assertThat(number(report, "^dead letters\\s+([\\d,]+)\\s+the poison")).isEqualTo(deadLetters).isEqualTo(1);
    // Exactly once into the lists: the relay hashes count one push per outbox row, relay-1's re-sent batch included.
    long pushed = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
      pushed += Long.parseLong(env.redis().hget(ListFormat.relayKey(list), "added"));
      assertThat(env.redis().llen(list)).as("list %s is drained", list).isZero();
    }
    assertThat(number(report, "^list pushes\\s+([\\d,]+)")).isEqualTo(pushed).isEqualTo(PAYMENTS);
    assertThat(number(report, "by the relays, for ([\\d,]+) outbox rows")).isEqualTo(count("SELECT count(*) FROM"
        + " outbox"));
    assertThat(number(report, "relay-2 re-sent ([\\d,]+) rows")).isPositive();
    long duplicates = number(report, "^duplicates skipped\\s+([\\d,]+)");
    long reclaimed = number(report, "^reclaimed\\s+([\\d,]+)");
    long charged = number(report, "charged ([\\d,]+) \\+");
    long unreported = number(report, "committed by the killed worker ([\\d,]+)");
    // Every message came back once in the re-push and was skipped (the poison one too), plus the killed batch.
    assertThat(number(report, "([\\d,]+) pushed again")).isEqualTo(PAYMENTS);
    assertThat(duplicates).isGreaterThanOrEqualTo(PAYMENTS + unreported);
    assertThat(charged + unreported).isEqualTo(charges);
    assertThat(unreported).as("the killed worker's batch").isPositive();
    assertThat(reclaimed).as("the reaper returned the dead consumer's processing lists").isGreaterThanOrEqualTo(
        unreported);
    assertThat(number(report, "^deliveries\\s+([\\d,]+)")).isGreaterThanOrEqualTo(charges + duplicates);
    assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isEqualTo(PAYMENTS);
    assertThat(LedgerAudit.audit(env.dataSource(), env.schema(), "ledger").passed()).isTrue();
  }

  private long count(String sql) {
    return env.queryLong(sql);
  }

  private static long number(String text, String regex) {
    Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(text);
    assertThat(m.find()).as("report line matching %s in:%n%s", regex, text).isTrue();
    return Long.parseLong(m.group(1).replace(",", ""));
  }
}
