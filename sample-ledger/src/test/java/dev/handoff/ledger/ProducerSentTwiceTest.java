package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** verify tells a producer that sent twice (different message IDs) from a redelivery. */
@HandoffTest
class ProducerSentTwiceTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  ProducerSentTwiceTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void verifyTellsAProducerThatSentTwiceFromARedelivery() throws Exception {
    // given: a producer that bypasses the payment service and sends one payment twice (two message IDs)
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(PaymentEvents.TOPIC_CONFIG).build();
    Payment payment = new Payment("twice-1", "acct-1", 700, false);
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      try (PreparedStatement ps = tx.prepareStatement(
          "INSERT INTO payment (payment_id, account, amount_cents) VALUES ('twice-1', 'acct-1', 700)")) {
        ps.executeUpdate();
      }
      outbox.append(tx, PaymentEvents.created(payment));
      outbox.append(tx, PaymentEvents.created(payment));
      tx.commit();
    }
    Relay relay = t.relay();
    relay.relayOnce();
    relay.close();

    // when: the ledger consumes both: different message IDs, so the inbox lets both through
    LedgerConsumer ledger = t.ledger("twice-ledger", "twice");
    ConsumerTestKit.drain(ledger.consumer(), Duration.ofSeconds(10));
    ledger.close();

    // then
    LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), "twice");
    assertThat(audit.passed()).isFalse();
    assertThat(audit.duplicated()).isEqualTo(1);
    assertThat(audit.byProducer()).isEqualTo(1);
    assertThat(audit.duplicates()).singleElement().satisfies(d -> {
      assertThat(d.cause()).isEqualTo(LedgerAudit.Cause.PRODUCER_SENT_TWICE);
      assertThat(d.distinctMessages()).isEqualTo(2);
    });
    LedgerTestSupport.Run verify = t.cli("verify", "--group", "twice");
    assertThat(verify.exit()).isEqualTo(1);
    assertThat(verify.out()).contains("verify ledger 'twice': FAIL", "twice-1 charged 2 times: the producer sent twice");
  }
}
