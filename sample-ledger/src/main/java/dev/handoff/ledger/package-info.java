/**
 * The sample billing ledger: a {@link dev.handoff.ledger.PaymentService} that writes a payment and its outbox
 * message in one transaction, a {@link dev.handoff.ledger.Ledger} that books one charge per payment message through
 * handoff's consumer (and, for contrast, a {@link dev.handoff.ledger.NaiveConsumer} that does the same without an
 * inbox), the {@link dev.handoff.ledger.LedgerAudit} behind {@code verify}, and the {@link dev.handoff.ledger.Demo}.
 */
package dev.handoff.ledger;
