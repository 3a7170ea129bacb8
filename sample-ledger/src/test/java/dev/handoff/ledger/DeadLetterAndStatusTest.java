package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/** Poison payments through dead letters and dlq retry; status keeps backlog and pending apart. */
@HandoffTest
class DeadLetterAndStatusTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  DeadLetterAndStatusTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void poisonPaymentsAreDeadLetteredAndRetriedAfterTheFixAndStatusKeepsBacklogAndPendingApart() throws Exception {
    // given: 20 payments, every 10th poison, published; 5 entries handed to a consumer that never acknowledges
    LedgerTestSupport.Run pay = t.cli("pay", "--count", "20", "--poison-every", "10");
    assertThat(pay.exit()).as(pay.err()).isZero();
    // before the relay runs, the 20 wait in the outbox: status counts them per shard, apart from any stream figure
    LedgerTestSupport.Run beforeRelay = t.cli("status", "--json");
    assertThat(sum(beforeRelay.out(), "outbox_depth")).isEqualTo(20);
    assertThat(beforeRelay.out()).doesNotContain("\"oldest_unpublished_ms\":null");
    Relay relay = t.relay();
    relay.relayOnce();
    relay.close();
    LedgerConsumer ledger = t.ledger("dlq-ledger", LedgerConsumer.DEFAULT_GROUP);
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      env.redis().xgroupCreate(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard), "ledger",
          new StreamEntryID(0, 0), true);
    }
    List<Map.Entry<String, ?>> handed = new ArrayList<>(env.redis().xreadGroup("ledger", "stuck",
        XReadGroupParams.xReadGroupParams().count(5),
        Map.of(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, 0), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY)));
    long handedOut = ((List<?>) handed.get(0).getValue()).size();

    // then status shows two different numbers
    LedgerTestSupport.Run status = t.cli("status", "--json");
    assertThat(status.exit()).as(status.err()).isZero();
    assertThat(sum(status.out(), "outbox_depth")).isZero();
    assertThat(status.out()).contains("\"group\":\"ledger\",\"backlog\":" + (20 - handedOut) + ",\"pending\":"
        + handedOut + ",");
    // and who holds each stream's history back: on shard 0 the entries handed out and not finished, from the first
    String firstOfShard0 = env.redis().xrange(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, 0), "-",
        "+", 1).get(0).getID().toString();
    assertThat(status.out()).contains("\"held_by\":{\"0\":{\"group\":\"ledger\",\"from\":\"" + firstOfShard0
        + "\"},\"1\":{\"group\":\"ledger\",\"from\":\"0-0\"}");
    // and the purge lag against the relays' retention: every published row is past a retention of 1 ms
    ConsumerTestKit.await("the database clock to pass the rows' publication", Duration.ofSeconds(5), () ->
        env.queryLong("SELECT count(*) FROM outbox WHERE published_at > clock_timestamp() - interval '5 ms'") == 0);
    LedgerTestSupport.Run lag = t.cli("status", "--json", "--outbox-retention", "1ms");
    assertThat(lag.out()).contains("\"rows_past_retention\":20,\"rows_past_retention_exact\":true,");
    LedgerTestSupport.Run lagText = t.cli("status", "--outbox-retention", "1ms");
    assertThat(lagText.out()).contains("outbox retention 0.001s: 20 published row(s) past it still in the outbox")
        .contains("shard 0: the stream's", "held from " + firstOfShard0 + " on by group ledger");

    // when: the ledger drains the group (the stuck entries are claimed after minIdle)
    ConsumerTestKit.drain(ledger.consumer(), Duration.ofSeconds(30));

    // then: the two poison payments are dead letters, and verify passes (poison is not expected to be charged)
    LedgerTestSupport.Run list = t.cli("dlq", "list");
    assertThat(list.out()).contains("the ledger refuses poison payment").hasLineCount(3);
    LedgerTestSupport.Run verify = t.cli("verify");
    assertThat(verify.exit()).as(verify.out()).isZero();
    assertThat(verify.out()).containsPattern("charges\\s+18").containsPattern("dead letters\\s+2");

    // when one poison payment is fixed and its dead letter retried, twice, then every dead letter
    String fixed = t.firstPoison();
    env.execute("UPDATE payment SET poison = false WHERE payment_id = '" + fixed + "'");
    long id = env.queryLong("SELECT d.id FROM dead_letter d JOIN outbox o USING (message_id) WHERE o.message_key = ?",
        fixed);
    LedgerTestSupport.Run retry = t.cli("dlq", "retry", "--id", Long.toString(id));
    LedgerTestSupport.Run retryAgain = t.cli("dlq", "retry", "--id", Long.toString(id));
    LedgerTestSupport.Run retryAll = t.cli("dlq", "retry", "--all");
    long unfixed = env.queryLong("SELECT id FROM dead_letter WHERE status = 'dead'");
    LedgerTestSupport.Run retryUnfixed = t.cli("dlq", "retry", "--id", Long.toString(unfixed));
    LedgerTestSupport.Run retryMissing = t.cli("dlq", "retry", "--id", "987654321");

    // then the fixed one is charged once, the other stays dead
    assertThat(retry.exit()).as(retry.err()).isZero();
    assertThat(retry.out()).contains("dead letter " + id + " retried: charged");
    assertThat(retryAgain.exit()).isZero();
    assertThat(retryAgain.out()).contains("nothing to do");
    assertThat(retryAll.exit()).isEqualTo(1);
    assertThat(retryAll.out()).contains("retried 0 dead letter(s); 1 still dead");
    assertThat(retryUnfixed.exit()).as("a dead letter that stays dead is a finding, as with --all").isEqualTo(1);
    assertThat(retryUnfixed.out()).startsWith("retry of dead letter " + unfixed + " ")
        .contains("it stays dead: ", "the ledger refuses poison payment").hasLineCount(1);
    assertThat(retryMissing.exit()).as("an id that does not exist is an error").isEqualTo(2);
    assertThat(retryMissing.err()).contains("987654321").hasLineCount(1);
    assertThat(env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger' AND payment_id = ?", fixed))
        .isEqualTo(1);
    LedgerTestSupport.Run verifyAfter = t.cli("verify", "--json");
    assertThat(verifyAfter.exit()).isZero();
    assertThat(verifyAfter.out()).contains("\"charges\":19", "\"dead_letters\":1", "\"duplicated\":0");
    ledger.close();
  }

  /** The sum of a numeric field over every object of a JSON text that has it. */
  private static long sum(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\":(\\d+)").matcher(json);
    long total = 0;
    while (m.find()) {
      total += Long.parseLong(m.group(1));
    }
    return total;
  }
}
