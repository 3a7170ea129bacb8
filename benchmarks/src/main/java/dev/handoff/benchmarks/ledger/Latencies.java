package dev.handoff.benchmarks.ledger;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Commit-to-charge latencies in log-spaced buckets (10% wide, 0.1 ms to 10 min), one set per sampling window, so
 * that memory stays flat however long the soak runs.
 */
final class Latencies {

  private static final int BUCKETS = 170;
  private static final double BASE_MS = 0.1;
  private static final double RATIO = 1.1;
  private final List<double[]> windowTimes = new ArrayList<>();
  private final List<long[]> windows = new ArrayList<>();
  private volatile AtomicLongArray current = new AtomicLongArray(BUCKETS);

  void record(long nanos) {
    double ms = nanos / 1e6;
    int b = ms <= BASE_MS ? 0 : (int) Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BASE_MS) / Math.log(RATIO)));
    current.incrementAndGet(b);
  }

  /** Closes the current window at {@code t} seconds; returns its counts. */
  synchronized long[] roll(double t) {
    AtomicLongArray done = current;
    current = new AtomicLongArray(BUCKETS);
    long[] counts = new long[BUCKETS];
    for (int i = 0; i < BUCKETS; i++) {
      counts[i] = done.get(i);
    }
    windows.add(counts);
    windowTimes.add(new double[] {t});
    return counts;
  }

  /** The p99 of the windows that closed in {@code [from, to)} seconds. */
  synchronized double p99Ms(double from, double to) {
    long[] merged = new long[BUCKETS];
    for (int w = 0; w < windows.size(); w++) {
      double t = windowTimes.get(w)[0];
      if (t >= from && t < to) {
        for (int i = 0; i < BUCKETS; i++) {
          merged[i] += windows.get(w)[i];
        }
      }
    }
    return p99Ms(merged);
  }

  static long count(long[] counts) {
    long n = 0;
    for (long c : counts) {
      n += c;
    }
    return n;
  }

  /** The upper edge of the bucket that holds the 99th percentile. */
  static double p99Ms(long[] counts) {
    long n = count(counts);
    if (n == 0) {
      return 0;
    }
    long rank = (long) Math.ceil(n * 0.99);
    long seen = 0;
    for (int i = 0; i < counts.length; i++) {
      seen += counts[i];
      if (seen >= rank) {
        return BASE_MS * Math.pow(RATIO, i);
      }
    }
    return BASE_MS * Math.pow(RATIO, counts.length - 1);
  }
}
