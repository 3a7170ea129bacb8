/**
 * The sample billing ledger: a {@link dev.handoff.ledger.PaymentService} that writes a payment and its outbox
 * message in one transaction, a {@link dev.handoff.ledger.Ledger} that books one charge per payment message through
 * handoff's consumer, and the {@link dev.handoff.ledger.LedgerAudit} behind {@code verify}. The demo, and the
 * consumer without an inbox it compares against, are the ledger-demo module's.
 */
package dev.handoff.ledger;
