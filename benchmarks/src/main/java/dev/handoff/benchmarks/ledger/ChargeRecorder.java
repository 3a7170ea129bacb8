package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The end-to-end run's listener on its ledger consumer: the commit time of each charge (the other end of
 * commit-to-charge), the charges and batch commits counted, and, with a consumer limit, the pacing that holds the
 * group to it.
 */
final class ChargeRecorder implements ConsumerListener {

  private final Timings timings;
  private final double consumerLimit;
  private final long limitStart = System.nanoTime();
  private final AtomicLong limited = new AtomicLong();
  private final AtomicLong charged = new AtomicLong();
  private final AtomicLong unrecorded = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong batchEntries = new AtomicLong();

  /** @param consumerLimit entries per second the whole group may settle; 0 is no limit */
  ChargeRecorder(Timings timings, double consumerLimit) {
    this.timings = timings;
    this.consumerLimit = consumerLimit;
  }

  @Override
  public void handled(InboundMessage m) {
    long now = System.nanoTime();
    long seq = BenchPayments.seqOf(m.key());
    if (seq >= 0) {
      if (timings.committedAt(seq) < 0) {
        unrecorded.incrementAndGet();
      }
      timings.charged(seq, now);
    }
    charged.incrementAndGet();
  }

  @Override
  public void batchCommitted(int size, Duration elapsed) {
    batches.incrementAndGet();
    batchEntries.addAndGet(size);
    if (consumerLimit > 0) {
      // Pacing: this worker waits until the group's budget allows the entries it just settled.
      long due = limitStart + (long) (limited.addAndGet(size) / consumerLimit * 1e9);
      long wait = due - System.nanoTime();
      if (wait > 0) {
        BenchThreads.pause(wait / 1_000_000);
      }
    }
  }

  /** Charges so far. */
  long charged() {
    return charged.get();
  }

  /** The consumer's batch transactions that committed (one database commit each). */
  long batchCommits() {
    return batches.get();
  }

  /** Entries in those batches. */
  long batchEntries() {
    return batchEntries.get();
  }

  /** Charges of payments whose commit was not recorded yet when they were charged. */
  long unrecorded() {
    return unrecorded.get();
  }
}
