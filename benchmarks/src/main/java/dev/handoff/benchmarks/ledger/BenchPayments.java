package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.Payment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The benchmark's payments: numbered, spread over 1,000 accounts, with amounts that vary, so that the components,
 * their baselines and the end-to-end runs all write the same rows.
 */
final class BenchPayments {

  private BenchPayments() {}

  /** Payments {@code base} to {@code base + count - 1}, their IDs starting with {@code idPrefix}. */
  static List<Payment> batch(String idPrefix, long base, int count) {
    List<Payment> batch = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      long seq = base + i;
      batch.add(new Payment(idPrefix + seq, "acct-" + (seq % 1000 + 1), 100 + (seq * 7919L) % 99_900, false));
    }
    return batch;
  }

  /** The payment's message payload, as the payment service writes it. */
  static byte[] payload(Payment p) {
    return ("{\"payment_id\":\"" + p.paymentId() + "\",\"account\":\"" + p.account() + "\",\"amount_cents\":"
        + p.amountCents() + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** The sequence number at the end of a payment ID ({@code <prefix>-<seq>}), or -1 if there is none. */
  static long seqOf(String paymentId) {
    if (paymentId == null) {
      return -1;
    }
    int dash = paymentId.lastIndexOf('-');
    try {
      return Long.parseLong(paymentId.substring(dash + 1));
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
