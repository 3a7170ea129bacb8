package dev.handoff.benchmarks.ledger;

import java.util.List;
import java.util.function.ToLongFunction;

/** Whether a figure of the soak grows: a straight line through its samples of the second half of the run. */
final class Trends {

  private Trends() {}

  /**
   * The least-squares line through the samples of the second half; flat when the change it makes over that half is
   * within 10% of the half's mean or within {@code floor} (noise at small values).
   */
  static Soak.Trend fit(String metric, List<Soak.Sample> samples, double halfSeconds,
      ToLongFunction<Soak.Sample> value, double floor) {
    double firstSum = 0;
    int firstN = 0;
    double sx = 0;
    double sy = 0;
    double sxx = 0;
    double sxy = 0;
    int n = 0;
    for (Soak.Sample s : samples) {
      double y = value.applyAsLong(s);
      if (s.t() < halfSeconds) {
        firstSum += y;
        firstN++;
      } else {
        double x = s.t() / 60;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        n++;
      }
    }
    double slope = n < 2 ? 0 : (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double mean = n == 0 ? 0 : sy / n;
    double change = slope * halfSeconds / 60;
    boolean flat = n >= 2 && Math.abs(change) <= Math.max(0.10 * mean, floor);
    return new Soak.Trend(metric, firstN == 0 ? 0 : firstSum / firstN, mean, slope, change, flat);
  }
}
