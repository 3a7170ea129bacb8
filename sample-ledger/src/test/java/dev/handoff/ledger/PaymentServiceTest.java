package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The payment service: one payment, one message, whatever is submitted twice. */
@HandoffTest
class PaymentServiceTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  PaymentServiceTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void payingAnExistingPaymentIdAgainIsANoOpWithoutASecondMessage() {
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());

    assertThat(payments.pay(new Payment("once-1", "acct-1", 500, false))).isTrue();
    assertThat(payments.pay(new Payment("once-1", "acct-2", 999, false))).isFalse();
    assertThat(payments.payAll(List.of(new Payment("once-2", "acct-1", 100, false),
        new Payment("once-2", "acct-1", 100, false), new Payment("once-1", "acct-1", 500, false)))).isEqualTo(1);

    assertThat(env.queryLong("SELECT count(*) FROM payment WHERE payment_id LIKE 'once-%'")).isEqualTo(2);
    assertThat(env.queryLong("SELECT amount_cents FROM payment WHERE payment_id = 'once-1'")).isEqualTo(500);
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE message_key LIKE 'once-%'")).isEqualTo(2);
  }
}
