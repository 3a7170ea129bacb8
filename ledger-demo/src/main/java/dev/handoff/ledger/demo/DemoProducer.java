package dev.handoff.ledger.demo;

import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentService;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** The demo's payments, 100 per transaction on a thread of their own; the one in the middle is poison. */
final class DemoProducer {

  private final PaymentService payments;
  private final int n;
  private final AtomicLong paid = new AtomicLong();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread = new Thread(this::produce, "ledger-demo-producer");

  DemoProducer(PaymentService payments, int n) {
    this.payments = payments;
    this.n = n;
  }

  void start() {
    thread.start();
  }

  void interrupt() {
    thread.interrupt();
  }

  /** Payments committed so far. */
  long paid() {
    return paid.get();
  }

  /** Why creating payments failed, or {@code null}. */
  Throwable failure() {
    return failure.get();
  }

  private void produce() {
    long poisonAt = n / 2;
    try {
      List<Payment> batch = new ArrayList<>(100);
      for (int i = 1; i <= n; i++) {
        batch.add(new Payment(String.format("pay-%06d", i), "acct-" + (i % 97 + 1), 100 + (i * 7919L) % 99_900,
            i == poisonAt));
        if (batch.size() == 100 || i == n) {
          payments.payAll(batch);
          paid.addAndGet(batch.size());
          batch.clear();
        }
      }
    } catch (RuntimeException e) {
      failure.set(e);
    }
  }
}
