package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import java.util.List;

/** Waiting in the benchmark's and the soak's threads; an interrupt ends the run. */
final class BenchThreads {

  private BenchThreads() {}

  static void joinAll(List<Thread> threads) {
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LedgerException("the benchmark was interrupted");
      }
    }
  }

  /** Sleeps {@code millis}, or not at all if that is not above 0. */
  static void pause(long millis) {
    try {
      Thread.sleep(Math.max(0, millis));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LedgerException("the benchmark was interrupted");
    }
  }
}
