package dev.handoff.benchmarks.ledger;

import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Per-payment timings of one benchmark run, indexed by the payment's sequence number: when its transaction
 * committed and when its charge committed, both from {@link System#nanoTime()} in this JVM (one clock for both
 * ends). 16 bytes per payment, allocated in chunks as the run goes: this is the only memory the benchmark itself
 * grows with the number of payments.
 */
final class Timings {

  private static final int SHIFT = 16;
  private static final int CHUNK = 1 << SHIFT;
  private static final int MAX_CHUNKS = 1 << 12;

  private final long origin;
  private final AtomicReferenceArray<long[]> committed = new AtomicReferenceArray<>(MAX_CHUNKS);
  private final AtomicReferenceArray<long[]> charged = new AtomicReferenceArray<>(MAX_CHUNKS);

  Timings(long origin) {
    this.origin = origin;
  }

  long origin() {
    return origin;
  }

  /** The payment's transaction committed at {@code nanos}. */
  void committed(long seq, long nanos) {
    put(committed, seq, nanos - origin + 1);
  }

  /** Its charge committed at {@code nanos}. */
  void charged(long seq, long nanos) {
    put(charged, seq, nanos - origin + 1);
  }

  /** Nanoseconds after the origin when the payment committed, or -1 if not recorded. */
  long committedAt(long seq) {
    return get(committed, seq) - 1;
  }

  /** Nanoseconds after the origin when its charge committed, or -1 if not charged. */
  long chargedAt(long seq) {
    return get(charged, seq) - 1;
  }

  private static void put(AtomicReferenceArray<long[]> chunks, long seq, long value) {
    int c = (int) (seq >>> SHIFT);
    long[] chunk = chunks.get(c);
    if (chunk == null) {
      chunks.compareAndSet(c, null, new long[CHUNK]);
      chunk = chunks.get(c);
    }
    // Plain writes, read after the run's threads have stopped (join / close give the happens-before).
    chunk[(int) (seq & (CHUNK - 1))] = value;
  }

  private static long get(AtomicReferenceArray<long[]> chunks, long seq) {
    long[] chunk = chunks.get((int) (seq >>> SHIFT));
    return chunk == null ? 0 : chunk[(int) (seq & (CHUNK - 1))];
  }
}
