package dev.handoff.ledger.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The seed article's example, for real: a redelivered payment is charged naive=3, idempotent=2. */
@HandoffTest
class SeedExampleTest {

  private final TestEnvironment env;

  SeedExampleTest(TestEnvironment env) {
    this.env = env;
    LedgerMigrations.migrate(env.dataSource(), env.schema());
  }

  @Test
  void seedExampleARedeliveredPaymentIsChargedThreeTimesNaivelyAndTwiceWithTheInbox() throws Exception {
    // given: pay-1 is delivered, charged, and the consumer dies before XACK; then pay-2 arrives
    Relay relay = relay();
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());
    payments.pay(new Payment("seed-pay-1", "acct-1", 100, false));
    relay.relayOnce();

    NaiveConsumer naive = naive("seed-naive");
    naive.afterCommit(() -> {
      throw new SimulatedCrash("naive consumer killed after commit, before XACK");
    });
    naive.start();
    await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(10)).until(() -> naive.charged() == 1);
    naive.close(Duration.ofSeconds(5));
    LedgerConsumer ledger = ledger("seed-ledger", "seed-idem", point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT) {
        throw new SimulatedCrash("ledger consumer killed after commit, before XACK");
      }
    });
    assertThatThrownBy(() -> ledger.consumer().pollOnce()).isInstanceOf(SimulatedCrash.class);
    payments.pay(new Payment("seed-pay-2", "acct-1", 50, false));
    relay.relayOnce();

    // when: both restart under the same names, replay their own pending entries, then read pay-2
    NaiveConsumer naiveAgain = naive("seed-naive");
    naiveAgain.start();
    await().dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(10)).until(() -> naiveAgain.charged() == 2);
    naiveAgain.close(Duration.ofSeconds(5));
    LedgerConsumer ledgerAgain = ledger("seed-ledger", "seed-idem");
    ConsumerTestKit.drain(ledgerAgain.consumer(), Duration.ofSeconds(10));
    ledger.consumer().close();
    ledgerAgain.close();
    relay.close();

    // then: naive=3, idempotent=2, and the audit names the redelivery by its message ID
    assertThat(env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'seed-naive'")).isEqualTo(3);
    assertThat(env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'seed-idem'")).isEqualTo(2);
    assertThat(env.queryLong("SELECT sum(amount_cents) FROM charge WHERE ledger = 'seed-idem'")).isEqualTo(150);
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'seed-idem'")).isEqualTo(2);
    assertThat(ledgerAgain.counters().duplicates()).isEqualTo(1);
    LedgerAudit.Result naiveAudit = LedgerAudit.audit(env.dataSource(), env.schema(), "seed-naive");
    assertThat(naiveAudit.duplicated()).isEqualTo(1);
    assertThat(naiveAudit.byRedelivery()).isEqualTo(1);
    assertThat(naiveAudit.duplicates()).singleElement().satisfies(d -> {
      assertThat(d.paymentId()).isEqualTo("seed-pay-1");
      assertThat(d.cause()).isEqualTo(LedgerAudit.Cause.REDELIVERY);
      assertThat(d.messageIds()).hasSize(2).containsOnly(d.messageIds().get(0));
    });
  }

  private Relay relay() {
    return Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .build();
  }

  private NaiveConsumer naive(String group) {
    return new NaiveConsumer(env.dataSource(), env.redis(), env.schema(), env.keyPrefix(), group, group + "-worker", 1, 10,
        Duration.ofSeconds(30));
  }

  private LedgerConsumer ledger(String name, String group) {
    return ledger(name, group, ConsumerFaults.NONE);
  }

  /** A ledger consumer with short timeouts and a fault hook (a worker that throws a SimulatedCrash there dies). */
  private LedgerConsumer ledger(String name, String group, ConsumerFaults faults) {
    return new LedgerConsumerBuilder(env.dataSource(), env.redisSpec())
        .faults(faults)
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .group(group)
        .consumerName(name)
        .workers(1)
        .block(Duration.ofMillis(50))
        .minIdle(Duration.ofMillis(600))
        .reclaimInterval(Duration.ofMillis(50))
        .maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100))
        .persistStats(false)
        .build();
  }
}
