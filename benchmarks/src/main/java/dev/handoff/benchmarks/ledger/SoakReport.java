package dev.handoff.benchmarks.ledger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/** Writes a soak's {@code soak-report.md} and its SVG charts into a folder, and its one-line verdict. */
public final class SoakReport {

  private SoakReport() {}

  /** Writes the report; returns the files written, the report first. */
  public static List<Path> write(Soak.Result r, Path dir, String commandLine) {
    try {
      Files.createDirectories(dir);
      List<Path> files = new ArrayList<>();
      Soak.Config c = r.config();
      Environment e = r.env();
      StringBuilder md = new StringBuilder("# handoff soak\n\n");
      md.append("Run ").append(OffsetDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
          .append(" with `").append(commandLine).append("`.\n\n");
      md.append(String.format(Locale.ROOT, "The ledger at a fixed %,.0f payments/s for %d s (%d producer(s) x %d"
              + " payment(s) per transaction, one relay, two ledger consumers of %d worker(s) x batch %d, %d shards),"
              + " with retention shortened so that every retention path runs many times inside the run: outbox"
              + " retention %d s (relay maintenance every 10 s), inbox dedup window %d s (automatic purge every"
              + " 10 s), streams trimmed to what the group finished. Every %d s the soak reads what every place that"
              + " keeps work holds. A figure is *flat* when the least-squares line through the second half's samples"
              + " (every horizon reached by then) changes it by at most 10%% of its mean over that half, or by a small"
              + " absolute floor. All components share one JVM, so the heap figure is theirs together.\n\n",
          c.rate(), c.duration().toSeconds(), c.producers(), c.producerBatch(), c.workers(), c.batch(), c.shards(),
          c.outboxRetention().toSeconds(), c.dedupWindow().toSeconds(), c.sampleEvery().toSeconds()));
      md.append("| | |\n|---|---|\n");
      md.append("| machine | ").append(e.cores()).append(" cores, ").append(e.memoryBytes() >> 30)
          .append(" GiB, ").append(e.cpu()).append(" |\n");
      md.append("| JDK | ").append(e.jdk()).append(" |\n");
      md.append("| PostgreSQL | ").append(e.postgres()).append(" |\n");
      for (Map.Entry<String, String> s : e.postgresSettings().entrySet()) {
        md.append("| `").append(s.getKey()).append("` | ").append(s.getValue()).append(" |\n");
      }
      md.append("| Redis | ").append(e.redis()).append(" (").append(e.redisSettings()).append(") |\n");
      md.append("| servers | ").append(e.servers()).append(" |\n\n");

      md.append("## Verdict\n\n").append(verdict(r)).append("\n\n");
      md.append("| figure | first half, mean | second half, mean | slope per minute (second half) | change over the"
          + " second half | flat |\n|---|---|---|---|---|---|\n");
      for (Soak.Trend t : r.trends()) {
        md.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f | %+,.0f | %+,.0f | %s |%n", t.metric(),
            t.firstHalfMean(), t.secondHalfMean(), t.slopePerMinute(), t.changeOverSecondHalf(),
            t.flat() ? "yes" : "**no**"));
      }
      md.append(String.format(Locale.ROOT, "| p99 commit to charge (ms) | %.1f | %.1f | | x%.2f | %s |%n",
          r.p99FirstHalf(), r.p99SecondHalf(), r.p99FirstHalf() == 0 ? 0 : r.p99SecondHalf() / r.p99FirstHalf(),
          r.p99Held() ? "yes (<= 1.2x)" : "**no** (> 1.2x)"));
      md.append(String.format(Locale.ROOT, "%nPayments %,d, charged %,d; audit: %,d missing, %,d duplicated; drained"
              + " %.1f s after the producers stopped. Retention did: %,d outbox rows purged, %,d stream entries"
              + " trimmed.%n%n", r.paid(), r.charged(), r.audit().missing(), r.audit().duplicated(),
          r.drainSeconds(), r.outboxPurged(), r.trimmed()));

      md.append("## Samples\n\n| t (s) | paid | charged | stream entries | Redis used_memory (MB) | outbox rows |"
          + " past retention | inbox rows | heap after GC (MB) | p99 (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n");
      for (Soak.Sample s : r.samples()) {
        md.append(String.format(Locale.ROOT, "| %.0f | %,d | %,d | %,d | %.1f | %,d | %,d | %,d | %d | %.1f |%n",
            s.t(), s.paid(), s.charged(), s.streamLength(), s.redisUsedMemory() / 1e6, s.outboxRows(),
            s.pastRetention(), s.inboxRows(), s.heapAfterGc() >> 20, s.p99Ms()));
      }
      md.append("\n## Charts\n\n");
      chart(files, md, dir, "soak-rows.svg", "Rows and entries held", "rows / entries", r.samples(),
          List.of(series("stream entries", r.samples(), Soak.Sample::streamLength),
              series("outbox rows", r.samples(), Soak.Sample::outboxRows),
              series("inbox rows", r.samples(), Soak.Sample::inboxRows)));
      chart(files, md, dir, "soak-memory.svg", "Memory", "MB", r.samples(),
          List.of(series("Redis used_memory", r.samples(), s -> s.redisUsedMemory() / 1e6),
              series("JVM heap after GC", r.samples(), s -> s.heapAfterGc() / 1e6)));
      chart(files, md, dir, "soak-p99.svg", "p99 commit to charge, per 10 s window", "ms", r.samples(),
          List.of(series("p99", r.samples(), Soak.Sample::p99Ms)));
      Path report = dir.resolve("soak-report.md");
      Files.writeString(report, md.toString(), StandardCharsets.UTF_8);
      files.add(0, report);
      return files;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** One line: each figure flat or not (with its change over the second half), p99, and the audit. */
  public static String verdict(Soak.Result r) {
    StringBuilder b = new StringBuilder(r.passed() ? "PASS: " : "FAIL: ");
    for (Soak.Trend t : r.trends()) {
      b.append(String.format(Locale.ROOT, "%s %s (%+,.0f over the second half); ", t.metric(),
          t.flat() ? "flat" : "GROWS", t.changeOverSecondHalf()));
    }
    b.append(String.format(Locale.ROOT, "p99 %.1f -> %.1f ms (%s); %,d missing, %,d duplicated", r.p99FirstHalf(),
        r.p99SecondHalf(), r.p99Held() ? "within 1.2x" : "ABOVE 1.2x", r.audit().missing(), r.audit().duplicated()));
    return b.toString();
  }

  private static Svg.Series series(String name, List<Soak.Sample> samples, ToDoubleFunction<Soak.Sample> y) {
    double[] xs = new double[samples.size()];
    double[] ys = new double[samples.size()];
    for (int i = 0; i < samples.size(); i++) {
      xs[i] = samples.get(i).t();
      ys[i] = y.applyAsDouble(samples.get(i));
    }
    return new Svg.Series(name, xs, ys);
  }

  private static void chart(List<Path> files, StringBuilder md, Path dir, String name, String title, String yLabel,
      List<Soak.Sample> samples, List<Svg.Series> series) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, Svg.lineChart(title, "seconds", yLabel, series, false), StandardCharsets.UTF_8);
    files.add(file);
    md.append("![").append(title).append("](").append(name).append(")\n\n");
  }
}
