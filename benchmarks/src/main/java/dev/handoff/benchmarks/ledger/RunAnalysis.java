package dev.handoff.benchmarks.ledger;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An end-to-end run's figures from what it recorded: commit-to-charge latencies of the payments committed after the
 * warm-up (percentiles, per second, histogram), throughput in the window, and from the timeline the database's
 * transaction rate, the backlog's growth over the second half and the peaks.
 */
final class RunAnalysis {

  private RunAnalysis() {}

  /**
   * What an end-to-end run recorded. Times in nanoseconds after the origin of {@code timings}. Transactions counted
   * in process (see {@link Bench.Commits}): {@code relayCommits} -1 where the relay's are not counted, to be
   * derived; {@code samplerCommits} the sampler's own between its first and its last sample, which the database's
   * delta is taken over.
   */
  record Measured(String name, double rate, double consumerLimit, Timings timings, long startNs, long stopNs,
      long paid, long charged, long unrecorded, double drainSeconds, boolean drained, List<Bench.Sample> samples,
      long producerCommits, long relayCommits, long relayRollbacks, long consumerCommits, long samplerCommits,
      ConsumerTrips trips) {}

  /** Latencies in nanoseconds, sorted; those per second of charge time; counts. */
  private record Charges(long[] sorted, List<List<Long>> perSecond, long inWindow, long[] histogram) {}

  /** Per second of charge time, for the latency chart. */
  private record PerSecond(double[] t, double[] p50, double[] p99, double[] max, double[] count) {}

  /** What the samples say. */
  private record Timeline(double dbTps, double backlogGrowth, long peakBacklog, long peakHeap, long peakAfterGc) {}

  static Bench.Run analyse(Measured m, double warmupSeconds) {
    double seconds = (m.stopNs() - m.startNs()) / 1e9;
    long warmupEndNs = m.startNs() + (long) (warmupSeconds * 1e9);
    int secs = (int) Math.ceil((m.samples().get(m.samples().size() - 1).t())) + 1;
    Charges c = charges(m, warmupEndNs, secs);
    PerSecond s = perSecond(c.perSecond());
    Timeline tl = timeline(m.samples(), warmupEndNs, m.startNs(), m.stopNs());
    long[] sorted = c.sorted();
    int n = sorted.length;
    double window = (m.stopNs() - warmupEndNs) / 1e9;
    double endToEnd = m.paid() / (seconds + (m.drained() ? m.drainSeconds() : Double.NaN));
    return new Bench.Run(m.name(), m.rate(), m.consumerLimit(), seconds, m.paid(), m.charged(), m.paid() / seconds,
        c.inWindow() / window, endToEnd, n, m.unrecorded(), pct(sorted, 0.50), pct(sorted, 0.95), pct(sorted, 0.99),
        n == 0 ? Double.NaN : sorted[n - 1] / 1e6, m.drainSeconds(), m.drained(), tl.dbTps(), tl.backlogGrowth(),
        tl.peakBacklog(), tl.peakHeap(), tl.peakAfterGc(), List.copyOf(m.samples()), s.t(), s.p50(), s.p99(),
        s.max(), s.count(), c.histogram(), commits(m), m.trips(), RowWaits.NONE, CpuUse.NONE);
  }

  /**
   * The run's commits: those counted, and the {@code xact_commit} delta from the first sample to the last less the
   * sampler's own transactions in between. PostgreSQL flushes each backend's counters at most once a second, so the
   * delta can miss up to about a second of commits at the end: approximate, a cross-check.
   */
  private static Bench.Commits commits(Measured m) {
    List<Bench.Sample> samples = m.samples();
    Bench.Sample first = samples.get(0);
    Bench.Sample last = samples.get(samples.size() - 1);
    long database = first.xactCommit() < 0 || last.xactCommit() < 0 ? -1
        : last.xactCommit() - first.xactCommit() - m.samplerCommits();
    boolean counted = m.relayCommits() >= 0;
    long relay = counted ? m.relayCommits() : database < 0 ? -1
        : database - m.producerCommits() - m.consumerCommits();
    return new Bench.Commits(m.producerCommits(), relay, m.relayRollbacks(), m.consumerCommits(), database,
        counted);
  }

  /** Latencies of payments committed after the warm-up, and charges per second of charge time. */
  private static Charges charges(Measured m, long warmupEndNs, int secs) {
    long[] lat = new long[(int) m.paid()];
    int n = 0;
    List<List<Long>> perSec = new ArrayList<>();
    for (int i = 0; i < secs; i++) {
      perSec.add(new ArrayList<>());
    }
    long chargedInWindow = 0;
    long[] histogram = new long[Bench.BUCKETS_MS.length];
    for (long seq = 0; seq < m.paid(); seq++) {
      long c = m.timings().committedAt(seq);
      long ch = m.timings().chargedAt(seq);
      if (ch < 0) {
        continue;
      }
      if (ch >= warmupEndNs && ch <= m.stopNs()) {
        chargedInWindow++;
      }
      if (c < 0 || c < warmupEndNs) {
        continue;
      }
      long l = Math.max(0, ch - c);
      lat[n++] = l;
      int sec = (int) (ch / 1_000_000_000L);
      if (sec < secs) {
        perSec.get(sec).add(l);
      }
      double ms = l / 1e6;
      int b = 0;
      while (ms > Bench.BUCKETS_MS[b]) {
        b++;
      }
      histogram[b]++;
    }
    long[] sorted = Arrays.copyOf(lat, n);
    Arrays.sort(sorted);
    return new Charges(sorted, perSec, chargedInWindow, histogram);
  }

  private static PerSecond perSecond(List<List<Long>> perSec) {
    List<Double> t = new ArrayList<>();
    List<double[]> v = new ArrayList<>();
    for (int s = 0; s < perSec.size(); s++) {
      List<Long> xs = perSec.get(s);
      if (xs.isEmpty()) {
        continue;
      }
      long[] a = xs.stream().mapToLong(Long::longValue).sorted().toArray();
      t.add(s + 1.0);
      v.add(new double[] {pct(a, 0.50), pct(a, 0.99), a[a.length - 1] / 1e6, a.length});
    }
    return new PerSecond(t.stream().mapToDouble(Double::doubleValue).toArray(),
        v.stream().mapToDouble(x -> x[0]).toArray(), v.stream().mapToDouble(x -> x[1]).toArray(),
        v.stream().mapToDouble(x -> x[2]).toArray(), v.stream().mapToDouble(x -> x[3]).toArray());
  }

  /**
   * The database's transactions per second after the warm-up, the backlog's growth from the middle of the run to
   * its end, and the peaks.
   */
  private static Timeline timeline(List<Bench.Sample> samples, long warmupEndNs, long startNs, long stopNs) {
    Bench.Sample first = null;
    Bench.Sample last = null;
    Bench.Sample mid = null;
    long peakBacklog = 0;
    long peakHeap = 0;
    long peakAfterGc = 0;
    for (Bench.Sample s : samples) {
      peakBacklog = Math.max(peakBacklog, backlog(s));
      peakHeap = Math.max(peakHeap, s.heapUsed());
      peakAfterGc = Math.max(peakAfterGc, s.heapAfterGc());
      if (first == null && s.t() * 1e9 >= warmupEndNs) {
        first = s;
      }
      if (mid == null && s.t() * 1e9 >= (startNs + stopNs) / 2) {
        mid = s;
      }
      if (s.t() * 1e9 <= stopNs) {
        last = s;
      }
    }
    double dbTps = first != null && last != null && last.t() > first.t()
        ? (last.xactCommit() - first.xactCommit()) / (last.t() - first.t()) : Double.NaN;
    double growth = mid != null && last != null && last.t() > mid.t()
        ? (backlog(last) - backlog(mid)) / (last.t() - mid.t()) : 0;
    return new Timeline(dbTps, growth, peakBacklog, peakHeap, peakAfterGc);
  }

  private static long backlog(Bench.Sample s) {
    return s.unpublished() + s.streamBacklog() + s.pending();
  }

  private static double pct(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))] / 1e6;
  }
}
