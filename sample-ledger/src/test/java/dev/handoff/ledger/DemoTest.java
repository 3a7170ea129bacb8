package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code demo} against the test servers (by URL): it exits 0 and every number of its report is the database's. */
@HandoffTest
class DemoTest {

  private static final int PAYMENTS = 2_000;

  private final TestEnvironment env;

  DemoTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void demoExitsZeroAndItsReportAgreesWithTheDatabase() {
    // when
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), "demo", "--payments",
        Integer.toString(PAYMENTS), "--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--schema", env.schema(), "--key-prefix", env.keyPrefix());

    // then
    String report = out.toString();
    assertThat(exit).as("exit code; output:%n%s%nstderr:%n%s", report, err).isZero();
    assertThat(report).contains("FAULT relay-1 killed after XADD", "killed after its batch committed, before XACK",
        "FAULT replay: both groups set back to 0-0", "verify ledger 'ledger': PASS");
    long payments = count("SELECT count(*) FROM payment");
    long charges = count("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
    long deadLetters = count("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger' AND status = 'dead'");
    long naiveCharges = count("SELECT count(*) FROM charge WHERE ledger = 'naive'");
    long naiveExtra = naiveCharges - count("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'naive'");

    assertThat(payments).isEqualTo(PAYMENTS);
    assertThat(number(report, "^payments\\s+([\\d,]+)")).isEqualTo(payments);
    assertThat(number(report, "^charges\\s+([\\d,]+)")).isEqualTo(charges).isEqualTo(PAYMENTS - 1);
    assertThat(number(report, "^dead letters\\s+([\\d,]+)\\s+the poison")).isEqualTo(deadLetters).isEqualTo(1);
    assertThat(number(report, "^stream entries\\s+([\\d,]+)")).isEqualTo(count("SELECT count(*) FROM outbox"));
    // Exactly once into the streams although relay-1 was killed between its XADD and its mark: one entry per row.
    List<String> messageIds = streamedMessageIds();
    assertThat(messageIds).hasSize((int) count("SELECT count(*) FROM outbox"));
    assertThat(messageIds.stream().distinct()).hasSameSizeAs(messageIds);
    long deliveries = number(report, "^deliveries\\s+([\\d,]+)");
    long duplicates = number(report, "^duplicates skipped\\s+([\\d,]+)");
    long reclaimed = number(report, "^reclaimed\\s+([\\d,]+)");
    // Every retained message came back once in the replay, and the inbox skipped each of them (the poison one too).
    assertThat(duplicates).isGreaterThanOrEqualTo(PAYMENTS);
    // The charges in the database are the consumers' handled count plus the killed worker's unreported batch.
    long charged = number(report, "charged ([\\d,]+) \\+");
    long unreported = number(report, "committed by the killed worker ([\\d,]+)");
    assertThat(charged + unreported).isEqualTo(charges);
    assertThat(unreported).as("the killed worker's batch").isPositive();
    assertThat(reclaimed).as("its entries and the poison's retries were claimed").isGreaterThanOrEqualTo(unreported);
    assertThat(deliveries).isGreaterThanOrEqualTo(charges + duplicates);
    assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isEqualTo(PAYMENTS);
    // The naive consumer's double charges are real rows
    assertThat(number(report, "same crash and replay\\): ([\\d,]+) charges")).isEqualTo(naiveCharges);
    assertThat(number(report, "payments charged more than once, ([\\d,]+) extra charges")).isEqualTo(naiveExtra);
    assertThat(naiveExtra).isGreaterThan(PAYMENTS - 1);
    LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), "ledger");
    assertThat(audit.passed()).isTrue();
    assertThat(LedgerAudit.audit(env.dataSource(), env.schema(), "naive").byRedelivery())
        .as("the naive ledger's double charges are redeliveries of one message ID").isEqualTo(PAYMENTS - 1);
  }

  /** The message ID of every entry of every shard's stream (the demo does not trim). */
  private List<String> streamedMessageIds() {
    List<String> ids = new ArrayList<>();
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      env.redis().xrange(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard), "-", "+")
          .forEach(e -> ids.add(e.getFields().get(StreamFormat.MESSAGE_ID)));
    }
    return ids;
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
