package dev.handoff.ledger.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * ledger-demo.jar's demo against the test servers (by URL), once per transport ({@link DemoOnStreamsTest},
 * {@link DemoOnListsTest}): it exits 0 and every number of its report is the database's (or, on lists, the relay
 * hashes').
 */
@HandoffTest
abstract class DemoTest {

  private static final int PAYMENTS = 2_000;

  private final TestEnvironment env;
  private final Transport transport;

  DemoTest(TestEnvironment env, Transport transport) {
    this.env = env;
    this.transport = transport;
  }

  @Test
  void demoExitsZeroAndItsReportAgreesWithTheDatabase() {
    // when
    List<String> args = new ArrayList<>();
    if (transport == Transport.LIST) {
      args.addAll(List.of("--transport", "list", "--list-capacity", "300"));
    }
    args.addAll(List.of("--payments", Integer.toString(PAYMENTS), "--jdbc-url", env.postgres().jdbcUrl(),
        "--redis-url", env.redisUri().toString(), "--schema", env.schema(), "--key-prefix", env.keyPrefix()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = DemoCommand.execute(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));

    // then
    String report = out.toString();
    assertThat(exit).as("exit code; output:%n%s%nstderr:%n%s", report, err).isZero();
    if (transport == Transport.STREAM) {
      assertThat(report).contains("FAULT relay-1 killed after XADD", "killed after its batch committed, before XACK",
          "FAULT replay: both groups set back to 0-0");
    } else {
      assertThat(report).contains("on Redis lists (capacity 300 per shard", "FAULT relay-1 killed after RPUSH",
          "killed after its batch committed, before LREM", "REPLAY on lists: a list keeps nothing once acknowledged",
          "naive consumer: not run on lists");
    }
    assertThat(report).contains("verify ledger 'ledger': PASS");
    long payments = count("SELECT count(*) FROM payment");
    long charges = count("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
    long deadLetters = count("SELECT count(*) FROM dead_letter WHERE consumer_group = 'ledger' AND status = 'dead'");
    assertThat(payments).isEqualTo(PAYMENTS);
    assertThat(number(report, "^payments\\s+([\\d,]+)")).isEqualTo(payments);
    assertThat(number(report, "^charges\\s+([\\d,]+)")).isEqualTo(charges).isEqualTo(PAYMENTS - 1);
    assertThat(number(report, "^dead letters\\s+([\\d,]+)\\s+the poison")).isEqualTo(deadLetters).isEqualTo(1);
    long outboxRows = count("SELECT count(*) FROM outbox");
    if (transport == Transport.STREAM) {
      assertThat(number(report, "^stream entries\\s+([\\d,]+)")).isEqualTo(outboxRows);
      // Exactly once into the streams although relay-1 was killed between its XADD and its mark: one entry per row.
      List<String> messageIds = streamedMessageIds();
      assertThat(messageIds).hasSize((int) outboxRows);
      assertThat(messageIds.stream().distinct()).hasSameSizeAs(messageIds);
    } else {
      // Exactly once into the lists: the relay hashes count one push per outbox row, relay-1's re-sent batch
      // included.
      long pushed = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String list = ListFormat.listKey(env.keyPrefix(), PaymentEvents.TOPIC, shard);
        pushed += Long.parseLong(env.redis().hget(ListFormat.relayKey(list), "added"));
        assertThat(env.redis().llen(list)).as("list %s is drained", list).isZero();
      }
      assertThat(number(report, "^list pushes\\s+([\\d,]+)")).isEqualTo(pushed).isEqualTo(PAYMENTS);
      assertThat(number(report, "by the relays, for ([\\d,]+) outbox rows")).isEqualTo(outboxRows);
      assertThat(number(report, "relay-2 re-sent ([\\d,]+) rows")).isPositive();
    }
    long deliveries = number(report, "^deliveries\\s+([\\d,]+)");
    long duplicates = number(report, "^duplicates skipped\\s+([\\d,]+)");
    long reclaimed = number(report, "^reclaimed\\s+([\\d,]+)");
    // The charges in the database are the consumers' handled count plus the killed worker's unreported batch.
    long charged = number(report, "charged ([\\d,]+) \\+");
    long unreported = number(report, "committed by the killed worker ([\\d,]+)");
    if (transport == Transport.STREAM) {
      // Every retained message came back once in the replay, and the inbox skipped each of them (the poison one too).
      assertThat(duplicates).isGreaterThanOrEqualTo(PAYMENTS);
    } else {
      // Every message came back once in the re-push and was skipped (the poison one too), plus the killed batch.
      assertThat(number(report, "([\\d,]+) pushed again")).isEqualTo(PAYMENTS);
      assertThat(duplicates).isGreaterThanOrEqualTo(PAYMENTS + unreported);
    }
    assertThat(charged + unreported).isEqualTo(charges);
    assertThat(unreported).as("the killed worker's batch").isPositive();
    assertThat(reclaimed).as("its entries and the poison's retries were claimed, or the reaper returned the dead"
        + " consumer's processing lists").isGreaterThanOrEqualTo(unreported);
    assertThat(deliveries).isGreaterThanOrEqualTo(charges + duplicates);
    assertThat(count("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isEqualTo(PAYMENTS);
    assertThat(LedgerAudit.audit(env.dataSource(), env.schema(), "ledger").passed()).isTrue();
    if (transport == Transport.STREAM) {
      // The naive consumer's double charges are real rows
      long naiveCharges = count("SELECT count(*) FROM charge WHERE ledger = 'naive'");
      long naiveExtra = naiveCharges - count("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'naive'");
      assertThat(number(report, "same crash and replay\\): ([\\d,]+) charges")).isEqualTo(naiveCharges);
      assertThat(number(report, "payments charged more than once, ([\\d,]+) extra charges")).isEqualTo(naiveExtra);
      assertThat(naiveExtra).isGreaterThan(PAYMENTS - 1);
      assertThat(LedgerAudit.audit(env.dataSource(), env.schema(), "naive").byRedelivery())
          .as("the naive ledger's double charges are redeliveries of one message ID").isEqualTo(PAYMENTS - 1);
    }
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
