package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pay}: creates new payments, each with its outbox message in the same transaction. */
@Command(name = "pay", description = "Creates N new payments (each with its outbox message, in one transaction).")
final class PayCommand implements Callable<Integer> {

  private static final int MAX_BATCH = 100;

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--count", required = true, description = "how many payments to create")
  int count;

  @Option(names = "--rate", defaultValue = "0", description = "payments per second (default: as fast as possible)")
  double rate;

  @Option(names = "--retry-for", defaultValue = "30s",
      description = "how long a batch whose transaction failed is tried again (default 30s): payment IDs are unique, so"
          + " a batch that did commit before its connection broke is not created twice")
  Duration retryFor;

  @Option(names = "--poison-every", defaultValue = "0",
      description = "make every K-th payment a poison payment the ledger rejects (default: none)")
  int poisonEvery;

  @Spec
  CommandSpec spec;

  private int retried;

  /**
   * {@link PaymentService#payAll}, tried again after a failure until {@code --retry-for} has passed. Safe whatever
   * the failure left behind: a commit that went through before its connection broke created those payments, and
   * the next attempt skips their IDs.
   *
   * @return how many payments this call created (those of an attempt that committed but failed are not counted)
   */
  private int payWithRetries(PaymentService payments, List<Payment> batch) throws InterruptedException {
    long deadline = System.nanoTime() + retryFor.toNanos();
    for (int attempt = 1; ; attempt++) {
      try {
        return payments.payAll(batch);
      } catch (LedgerException e) {
        if (System.nanoTime() - deadline >= 0) {
          throw e;
        }
        retried++;
        spec.commandLine().getErr().println("pay: " + LedgerCli.oneLine(e) + "; trying the batch again");
        spec.commandLine().getErr().flush();
        Thread.sleep(Math.min(1_000, 50L * attempt));
      }
    }
  }

  @Override
  public Integer call() throws InterruptedException {
    if (count < 1) {
      throw new LedgerException("--count must be at least 1, was " + count);
    }
    if (rate < 0 || poisonEvery < 0) {
      throw new LedgerException("--rate and --poison-every must not be negative");
    }
    Logging.handoff("WARN");
    String schema = connection.schema();
    // IDs unique across runs: a per-run prefix (time and randomness) and a sequence number.
    String run = Long.toString(System.currentTimeMillis(), 36) + Integer.toString(
        ThreadLocalRandom.current().nextInt(36 * 36 * 36), 36);
    int batchSize = rate == 0 ? MAX_BATCH : (int) Math.max(1, Math.min(MAX_BATCH, rate / 10));
    long started = System.nanoTime();
    int created = 0;
    int poison = 0;
    try (HikariDataSource db = connection.migratedDatabase(2, "ledger-pay")) {
      PaymentService payments = new PaymentService(db, schema);
      List<Payment> batch = new ArrayList<>(batchSize);
      for (int i = 1; i <= count; i++) {
        boolean isPoison = poisonEvery > 0 && i % poisonEvery == 0;
        poison += isPoison ? 1 : 0;
        batch.add(new Payment("p-" + run + "-" + i, "acct-" + ThreadLocalRandom.current().nextInt(1, 1001),
            ThreadLocalRandom.current().nextLong(100, 100_000), isPoison));
        if (batch.size() == batchSize || i == count) {
          try {
            created += payWithRetries(payments, batch);
          } catch (LedgerException e) {
            int before = i - batch.size();
            throw new LedgerException("pay stopped after creating " + created + " of " + count + " payments"
                + (before > 0 ? " (ids p-" + run + "-1.." + before + ")" : "") + "; the last batch of "
                + batch.size() + " may or may not have committed: " + e.getMessage(), e);
          }
          batch.clear();
          if (rate > 0) {
            // Pacing only: sleep until this many payments are due.
            long due = started + (long) (i / rate * 1e9);
            long wait = due - System.nanoTime();
            if (wait > 0) {
              Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
          }
        }
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    if (retried > 0) {
      spec.commandLine().getOut().printf("%d batch transaction(s) failed and were tried again%n", retried);
    }
    spec.commandLine().getOut().printf("created %,d payments (%,d poison) in %.1fs (%,.0f/s), ids p-%s-1..%d%n",
        created, poison, seconds, created / Math.max(seconds, 1e-9), run, count);
    return 0;
  }
}
