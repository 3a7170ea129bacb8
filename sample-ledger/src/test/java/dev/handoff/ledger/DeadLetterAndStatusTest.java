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

/**
 * Poison payments through dead letters and the operator's {@code handoff dlq retry}, which the running ledger
 * consumers carry out; the operator's {@code handoff status} keeps the ledger's backlog and pending apart.
 */
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
    LedgerTestSupport.Run beforeRelay = t.handoff("status", "--topic", PaymentEvents.TOPIC, "--json");
    assertThat(beforeRelay.exit()).as(beforeRelay.err()).isZero();
    assertThat(beforeRelay.out()).containsPattern("\"outboxDepth\":20,\"oldestUnpublishedMillis\":\\d+,");
    assertThat(sum(beforeRelay.out(), "outboxDepth")).isEqualTo(2 * 20); // the topic's, and its shards' together
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
        Map.of(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, 0),
            StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY)));
    long handedOut = ((List<?>) handed.get(0).getValue()).size();

    // then status shows two different numbers
    LedgerTestSupport.Run status = t.handoff("status", "--topic", PaymentEvents.TOPIC, "--json");
    assertThat(status.exit()).as(status.err()).isZero();
    assertThat(sum(status.out(), "outboxDepth")).isZero();
    assertThat(status.out()).contains("\"group\":\"ledger\",\"backlog\":" + (20 - handedOut)
        + ",\"backlogExact\":true,\"pending\":" + handedOut + ",");
    LedgerTestSupport.Run text = t.handoff("status", "--topic", PaymentEvents.TOPIC);
    assertThat(text.out()).contains("group ledger: backlog " + (20 - handedOut) + " (never delivered), pending "
        + handedOut + " (delivered, not acknowledged)", "consumers {stuck=" + handedOut + "}");

    // when: the ledger drains the group (the stuck entries are claimed after minIdle)
    ConsumerTestKit.drain(ledger.consumer(), Duration.ofSeconds(30));

    // then: the two poison payments are dead letters, and verify passes (poison is not expected to be charged)
    LedgerTestSupport.Run list = t.handoff("dlq", "list", "--group", "ledger");
    assertThat(list.out()).contains("the ledger refuses poison payment", "2 dead letters of group ledger: 2 dead")
        .hasLineCount(4);
    LedgerTestSupport.Run verify = t.cli("verify");
    assertThat(verify.exit()).as(verify.out()).isZero();
    assertThat(verify.out()).containsPattern("charges\\s+18").containsPattern("dead letters\\s+2")
        .contains("consumers     no counters recorded for group 'ledger'"); // this test's ledger does not persist them

    // when one poison payment is fixed and its dead letter's retry requested, twice, then every dead letter's;
    // the ledger consumer carries each request out at its next upkeep
    String fixed = t.firstPoison();
    env.execute("UPDATE payment SET poison = false WHERE payment_id = '" + fixed + "'");
    long id = env.queryLong("SELECT d.id FROM dead_letter d JOIN outbox o USING (message_id) WHERE o.message_key = ?",
        fixed);
    LedgerTestSupport.Run retry = t.handoff("dlq", "retry", "--group", "ledger", "--id", Long.toString(id));
    assertThat(ledger.consumer().maintainOnce()).isEqualTo(1);
    LedgerTestSupport.Run retryAgain = t.handoff("dlq", "retry", "--group", "ledger", "--id", Long.toString(id));
    LedgerTestSupport.Run retryAll = t.handoff("dlq", "retry", "--group", "ledger", "--all");
    assertThat(ledger.consumer().maintainOnce()).isEqualTo(1);
    long unfixed = env.queryLong("SELECT id FROM dead_letter WHERE status = 'dead'");
    LedgerTestSupport.Run retryMissing = t.handoff("dlq", "retry", "--group", "ledger", "--id", "987654321");
    LedgerTestSupport.Run after = t.handoff("dlq", "list", "--group", "ledger");

    // then the fixed one is charged once, the other stays dead
    assertThat(retry.exit()).as(retry.err()).isZero();
    assertThat(retry.out()).contains("requested retry of 1 dead letter of group ledger");
    assertThat(retryAgain.exit()).as("a dead letter retried already is refused by id").isEqualTo(2);
    assertThat(retryAgain.err()).contains(Long.toString(id)).hasLineCount(1);
    assertThat(retryAll.exit()).isZero();
    assertThat(retryAll.out()).contains("requested retry of 1 dead letter of group ledger");
    assertThat(retryMissing.exit()).as("an id that does not exist is an error").isEqualTo(2);
    assertThat(retryMissing.err()).contains("987654321").hasLineCount(1);
    assertThat(after.out()).containsPattern("(?m)^" + unfixed + " +ledger +retry-failed ")
        .containsPattern("(?m)^" + id + " +ledger +retried ")
        .contains("2 dead letters of group ledger: 1 retried, 1 retry-failed");
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
