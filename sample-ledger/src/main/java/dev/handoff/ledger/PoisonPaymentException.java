package dev.handoff.ledger;

import java.util.Set;

/** The ledger refuses to charge these payments (they are flagged poison): the message fails, every time. */
public final class PoisonPaymentException extends LedgerException {

  private static final long serialVersionUID = 1L;

  private final Set<String> paymentIds;

  public PoisonPaymentException(Set<String> paymentIds) {
    super("the ledger refuses poison payment(s) " + String.join(", ", paymentIds)
        + " (flagged poison; clear payment.poison and retry the dead letter)");
    this.paymentIds = Set.copyOf(paymentIds);
  }

  public Set<String> paymentIds() {
    return paymentIds;
  }
}
