package dev.handoff.benchmarks.ledger;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The chart of throughput and p99 against the asked rate, handoff beside the raw pipeline: two panels, charges per
 * second (after the warm-up) above, p99 commit-to-charge (log scale) below. A flat-out run has no asked rate, so it
 * is plotted at the rate its producers reached (each pipeline at its own) and labelled "flat out".
 */
final class RateChart {

  static final String FILE = "rates.svg";

  private RateChart() {}

  static String svg(Bench.Result r) {
    List<Bench.Run> handoff = r.runs();
    List<Bench.Run> raw = r.raw().stream().map(Bench.RawRun::run).toList();
    String x = "asked rate, payments/s (flat out: at the rate its producers reached)";
    String throughput = Svg.lineChart("Charged per second", x, "charges / s (after warm-up)",
        List.of(series("handoff", handoff, false), series("raw pipeline", raw, false)), false);
    String p99 = Svg.lineChart("p99 commit to charge", x, "ms (log scale)",
        List.of(series("handoff", handoff, true), series("raw pipeline", raw, true)), true);
    return Svg.stacked("Throughput and p99 against the asked rate: handoff and the raw pipeline",
        List.of(throughput, p99));
  }

  private static Svg.Series series(String name, List<Bench.Run> runs, boolean p99) {
    List<Bench.Run> sorted = new ArrayList<>(runs);
    sorted.sort(Comparator.comparingDouble(RateChart::asked));
    int n = sorted.size();
    double[] xs = new double[n];
    double[] ys = new double[n];
    String[] labels = new String[n];
    for (int i = 0; i < n; i++) {
      Bench.Run run = sorted.get(i);
      xs[i] = asked(run);
      ys[i] = p99 ? run.p99() : run.windowThroughput();
      String value = p99 ? Svg.fmt(ys[i]) + " ms" : BenchReport.n0(ys[i]);
      labels[i] = run.rate() == 0 ? "flat out: " + value : value;
    }
    return new Svg.Series(name, xs, ys, labels);
  }

  /** The asked rate, or for a flat-out run the rate its producers reached. */
  static double asked(Bench.Run run) {
    return run.rate() > 0 ? run.rate() : run.producedRate();
  }
}
