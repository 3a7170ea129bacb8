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
import java.util.stream.Collectors;

/** Writes a benchmark's {@code report.md} and its SVG charts into a folder. */
public final class BenchReport {

  private BenchReport() {}

  /** One target of the issue and whether this run met it. */
  public record Verdict(String target, String figure, String met) {}

  /** Writes the report; returns the files written. */
  public static List<Path> write(Bench.Result r, Path dir, String commandLine) {
    try {
      Files.createDirectories(dir);
      List<Path> files = new ArrayList<>();
      StringBuilder md = new StringBuilder();
      Bench.Config c = r.config();
      Environment e = r.env();
      md.append("# handoff end-to-end benchmark\n\n");
      md.append("Run ").append(OffsetDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME))
          .append(" with `").append(commandLine).append("`.\n\n");
      md.append("Path measured: `PaymentService` (payment row + outbox message, one transaction) -> `Relay` (outbox"
          + " -> Redis Streams) -> `LedgerConsumer` (inbox marker + charge row, one transaction per batch). Latency"
          + " is **commit to charge**: `System.nanoTime()` right after the payment's `commit()` returned, to"
          + " `nanoTime()` when the consumer reports the charge's commit (`ConsumerListener.handled`), both in this"
          + " JVM (one clock). Latencies and throughput count after a warm-up of ")
          .append(fmt1(c.warmupSeconds())).append(" s.\n\n");

      md.append("## Machine and settings\n\n| | |\n|---|---|\n");
      row(md, "cores", e.cores() + " (" + e.cpu() + ")");
      row(md, "memory", String.format(Locale.ROOT, "%.1f GiB", e.memoryBytes() / (double) (1L << 30)));
      row(md, "OS", e.os());
      row(md, "JDK", e.jdk());
      row(md, "JVM arguments", e.jvmArgs().isEmpty() ? "(none)" : "`" + e.jvmArgs() + "`");
      row(md, "max heap", (e.maxHeap() >> 20) + " MiB");
      row(md, "PostgreSQL", e.postgres());
      StringBuilder pgs = new StringBuilder();
      for (Map.Entry<String, String> s : e.postgresSettings().entrySet()) {
        pgs.append(pgs.length() == 0 ? "" : ", ").append(s.getKey()).append('=').append(s.getValue());
      }
      row(md, "PostgreSQL settings", pgs.toString());
      row(md, "checkpoints", e.checkpoints() == null ? "a `CHECKPOINT` after each run's set-up, right before it"
          + " starts (handoff's, raw's, the bare producers' and the warm-ups'): every run starts right after one, and"
          + " none falls inside a run that writes less WAL than `max_wal_size` calls for"
          : "left to the server's schedule (" + e.checkpoints() + "): a run may start in the middle of one, or meet"
          + " one");
      row(md, "Redis", e.redis() + " (" + e.redisSettings() + ")");
      row(md, "servers", e.servers() + "; everything on this machine, sharing its cores"
          + (c.pinned() == null ? "" : " except that the producer processes and their backends run on CPUs "
          + c.pinned().producerCpus() + " and everything else on " + c.pinned().otherCpus() + " (`--pin-producers`)"));
      row(md, "pool", "HikariCP with the driver's defaults (`prepareThreshold` 5), shared by producers, relay and"
          + " consumers, every connection open before the first run; one run of each pipeline at the first shape and"
          + " rate, not reported, warms the JIT first");
      row(md, "producer shapes", c.shapes().stream().map(Shape::toString).collect(Collectors.joining(", "))
          + " (sessions x payments per transaction); every rate runs at each");
      row(md, "topic", c.shards() + " shards, one relay");
      row(md, "relay retention", "outbox retention " + c.outboxRetention() + ", maintenance every "
          + c.maintenanceInterval());
      row(md, "consumer", c.workers() + " worker(s), batch " + c.batch() + ", batch handler (`Ledger.charge`)");
      row(md, "duration", c.duration().toSeconds() + " s per end-to-end run");
      row(md, "component backlog", String.format("%,d payments", c.payments()));
      row(md, "history", String.format("each end-to-end schema starts with %,d settled payments (payment, charge,"
          + " inbox marker and, except in the empty/retained comparison, their published outbox rows), analysed",
          Bench.HISTORY));
      md.append('\n');

      List<Verdict> verdicts = verdicts(r);
      md.append("## Targets\n\n| target | this run | met |\n|---|---|---|\n");
      for (Verdict v : verdicts) {
        md.append("| ").append(v.target()).append(" | ").append(v.figure()).append(" | ").append(v.met())
            .append(" |\n");
      }
      md.append('\n');

      Bench.Parts p = r.parts();
      md.append("## Components against their baselines (same run, same SQL shapes)\n\n");
      md.append(String.format("A backlog of %,d payments; each phase is timed on its own.%n%n", p.n()));
      md.append("| component | rate /s | baseline | baseline /s | ratio |\n|---|---|---|---|---|\n");
      md.append(partRow("producer: `PaymentService.payAll`", p.producer(), "raw JDBC payment insert + outbox row"
          + " insert", p.rawProducer()));
      md.append(partRow("relay: `relayOnce()` on the backlog", p.relay(), "raw pipelined XADD (1,000 per pipeline)",
          p.rawXadd()));
      md.append(partRow("relay: `relayOnce()` on the backlog", p.relay(), "hand-written at-least-once loop (select"
          + " 1,000, pipelined XADD, mark)", p.loop()));
      md.append(partRow("consumer: `LedgerConsumer`", p.consumer(), "raw batched insert of inbox marker + charge",
          p.rawConsumer()));
      md.append('\n');

      md.append("## End to end\n\n");
      md.append("| run | produced /s | charged /s (after warm-up) | end to end /s | p50 ms | p95 ms | p99 ms | max ms"
          + " | drain s | DB tx/s | backlog growth /s | peak backlog | peak heap MiB | sustained |\n");
      md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      List<Bench.Run> all = new ArrayList<>(r.runs());
      if (r.empty() != null) {
        all.add(r.empty());
      }
      if (r.retained() != null) {
        all.add(r.retained());
      }
      if (r.overload() != null) {
        all.add(r.overload());
      }
      for (Bench.Run run : all) {
        md.append("| ").append(run.name()).append(" | ").append(n0(run.producedRate())).append(" | ")
            .append(n0(run.windowThroughput())).append(" | ").append(n0(run.endToEnd())).append(" | ")
            .append(fmt1(run.p50())).append(" | ").append(fmt1(run.p95())).append(" | ").append(fmt1(run.p99()))
            .append(" | ").append(fmt1(run.max())).append(" | ").append(Double.isNaN(run.drainSeconds()) ? "-"
                : String.format(Locale.ROOT, "%.2f", run.drainSeconds())).append(" | ").append(n0(run.dbTps()))
            .append(" | ").append(n0(run.backlogGrowth())).append(" | ").append(String.format("%,d",
                run.peakBacklog())).append(" | ").append(run.peakHeap() >> 20).append(" | ")
            .append(run.rate() == 0 ? "flat out" : run.sustained() ? "yes" : "no").append(" |\n");
      }
      md.append("\n*produced*: payments committed per second while producers ran; *charged*: charges committed per"
          + " second between the warm-up and the producers' stop; *end to end*: payments / (producer time + drain"
          + " time); *backlog*: payments paid and not yet charged, split into outbox rows not yet"
          + " published (counted), pending entries (`XPENDING`) and stream entries never delivered (the rest, derived"
          + " so that the sampler does not spend Redis time counting);"
          + " *sustained*: the fixed rate was produced (within 2%), backlog growth <= 100/s over the second half,"
          + " drained within 2 s; *DB tx/s*: `pg_stat_database.xact_commit` delta over the measured window (all"
          + " clients of the database, the sampler included).\n\n");
      for (Bench.Run run : all) {
        if (run.unrecordedCommits() > 0) {
          md.append(String.format("%s: %,d charges were reported before their producer thread had recorded its"
              + " commit time (latency counted as 0).%n%n", run.name(), run.unrecordedCommits()));
        }
      }

      md.append(RawPipelineReport.section(r));
      md.append(producerSide(r));
      if (r.wakeUpMillis().length > 0) {
        double[] w = r.wakeUpMillis();
        md.append(String.format(Locale.ROOT, "### First row after %d s idle\n\n%d times, one payment after %d s with"
            + " nothing to do, its commit to its stream entry (a blocking `XREAD`): p50 %.1f ms, p99 %.1f ms, max"
            + " %.1f ms.\n\n", WakeUps.IDLE_SECONDS, w.length, WakeUps.IDLE_SECONDS, WakeUps.pct(w, 0.50),
            WakeUps.pct(w, 0.99), w[w.length - 1]));
      }
      files.add(svg(dir, RateChart.FILE, RateChart.svg(r)));
      md.append("### Throughput and p99 against the asked rate\n\n![throughput and p99 against the asked rate](")
          .append(RateChart.FILE).append(")\n\nA flat-out run is plotted at the rate its producers reached, each"
              + " pipeline at its own, and labelled. Every figure of these runs, one line per run, is in [")
          .append(SummaryTsv.FILE).append("](").append(SummaryTsv.FILE).append(").\n\n");
      Path tsv = dir.resolve(SummaryTsv.FILE);
      Files.writeString(tsv, SummaryTsv.of(r), StandardCharsets.UTF_8);
      files.add(tsv);

      // Charts
      List<Svg.Series> tput = new ArrayList<>();
      for (Bench.Run run : all) {
        if (run.samples().size() > 1) {
          tput.add(perSecond(run.name() + " charged", run.samples(), true));
        }
      }
      files.add(svg(dir, "throughput.svg", Svg.lineChart("Charges committed per second", "seconds since start",
          "charges / s", tput, false)));
      md.append("## Charts\n\n![throughput](throughput.svg)\n\n");
      int i = 1;
      for (Bench.Run run : all) {
        if (run.secT().length == 0) {
          i++;
          continue;
        }
        String lat = "latency-" + i + ".svg";
        String hist = "histogram-" + i + ".svg";
        files.add(svg(dir, lat, Svg.lineChart("Commit-to-charge latency per second: " + run.name(),
            "seconds since start (by charge time)", "ms (log scale)", List.of(
                new Svg.Series("p50", run.secT(), run.secP50()), new Svg.Series("p99", run.secT(), run.secP99()),
                new Svg.Series("max", run.secT(), run.secMax())), true)));
        List<String> labels = new ArrayList<>();
        double[] values = new double[Bench.BUCKETS_MS.length];
        long total = 0;
        for (long h : run.histogram()) {
          total += h;
        }
        for (int b = 0; b < Bench.BUCKETS_MS.length; b++) {
          labels.add(b == Bench.BUCKETS_MS.length - 1 ? ">" + Svg.fmt(Bench.BUCKETS_MS[b - 1])
              : "<=" + Svg.fmt(Bench.BUCKETS_MS[b]));
          values[b] = total == 0 ? 0 : 100.0 * run.histogram()[b] / total;
        }
        files.add(svg(dir, hist, Svg.barChart("Latency histogram: " + run.name(), "commit to charge, ms",
            "% of payments", labels, values)));
        md.append("### ").append(run.name()).append("\n\n![latency](").append(lat).append(")\n![histogram](")
            .append(hist).append(")\n\n");
        i++;
      }
      if (r.overload() != null) {
        Bench.Run o = r.overload();
        Sample2 s = Sample2.of(o.samples());
        files.add(svg(dir, "overload-memory.svg", Svg.lineChart("Overload: JVM heap while the backlog grows",
            "seconds since start", "MiB", List.of(new Svg.Series("heap used", s.t, s.heap),
                new Svg.Series("heap after last GC", s.t, s.afterGc)), false)));
        files.add(svg(dir, "overload-backlog.svg", Svg.lineChart("Overload: where the work waits",
            "seconds since start", "entries", List.of(new Svg.Series("outbox unpublished", s.t, s.outbox),
                new Svg.Series("stream never delivered", s.t, s.stream),
                new Svg.Series("in flight (pending)", s.t, s.pending)), false)));
        md.append("## Memory when producers outrun consumers tenfold\n\n");
        md.append(String.format("Producers at %,.0f/s, consumers paced to %,.0f/s (a listener sleeps after each"
            + " batch, as a slow handler would). In-flight work is bounded by workers x batch = %,d entries:"
            + " the backlog waits in Redis and PostgreSQL, not in the JVM.%n%n", o.rate(), o.consumerLimit(),
            c.workers() * c.batch()));
        md.append("![memory](overload-memory.svg)\n![backlog](overload-backlog.svg)\n\n");
        md.append("| s | paid | charged | outbox | stream backlog | in flight | heap MiB | after GC MiB |\n"
            + "|---|---|---|---|---|---|---|---|\n");
        for (Bench.Sample x : o.samples()) {
          md.append(String.format(Locale.ROOT, "| %.0f | %,d | %,d | %,d | %,d | %,d | %d | %d |%n", x.t(), x.paid(),
              x.charged(), x.unpublished(), x.streamBacklog(), x.pending(), x.heapUsed() >> 20,
              x.heapAfterGc() >> 20));
        }
        md.append('\n');
      }
      if (r.retained() != null && r.empty() != null) {
        md.append("## Retained rows\n\n");
        md.append(String.format(Locale.ROOT, "%,d published rows inserted in %.1f s before the run"
            + " (`INSERT ... SELECT generate_series`, then `VACUUM ANALYZE`). End to end flat out: %,.0f/s with the"
            + " outbox empty, %,.0f/s with the rows retained: %.0f%%.%n%n", c.retained(), r.retainedInsertSeconds(),
            r.empty().endToEnd(), r.retained().endToEnd(), 100 * r.retained().endToEnd() / r.empty().endToEnd()));
      }
      md.append("## Timeline of each run\n\n");
      for (Bench.Run run : all) {
        md.append("### ").append(run.name()).append("\n\n| s | paid | charged | outbox | stream backlog | pending |"
            + " heap MiB | DB xact_commit |\n|---|---|---|---|---|---|---|---|\n");
        for (Bench.Sample x : run.samples()) {
          md.append(String.format(Locale.ROOT, "| %.1f | %,d | %,d | %,d | %,d | %,d | %d | %,d |%n", x.t(),
              x.paid(), x.charged(), x.unpublished(), x.streamBacklog(), x.pending(), x.heapUsed() >> 20,
              x.xactCommit()));
        }
        md.append('\n');
      }
      Path report = dir.resolve("report.md");
      Files.writeString(report, md.toString(), StandardCharsets.UTF_8);
      files.add(0, report);
      return files;
    } catch (IOException ex) {
      throw new UncheckedIOException("could not write the report into " + dir + ": " + ex.getMessage(), ex);
    }
  }

  /** The targets, judged on this run. */
  /** What the application's appending transactions commit per second, flat out, beside the same without handoff. */
  static String producerSide(Bench.Result r) {
    if (r.producerSides().isEmpty()) {
      return "";
    }
    StringBuilder md = new StringBuilder("### Producer side\n\n| shape | payment alone, tx/s | raw pipeline, tx/s"
        + " | share | handoff, tx/s | share |\n|---|---|---|---|---|---|\n");
    for (Bench.ProducerSide p : r.producerSides()) {
      double per = p.shape().perTransaction();
      md.append("| ").append(p.shape()).append(" | ").append(n0(p.bare() / per)).append(" | ")
          .append(n0(p.raw() / per)).append(" | ").append(pct(p.raw() / p.bare())).append(" | ")
          .append(n0(p.handoff() / per)).append(" | ").append(pct(p.handoff() / p.bare())).append(" |\n");
    }
    return md.append("\nFlat out, transactions committed per second over the producers' whole time. *Payment"
        + " alone*: the same payment transactions with no outbox row and nothing else running. *Raw pipeline*: the"
        + " payment and a plain outbox row, with the raw relay loop and consumer running. *handoff*: the payment and"
        + " `Outbox.append`, with the relay and the ledger consumer running.\n\n").toString();
  }

  public static List<Verdict> verdicts(Bench.Result r) {
    List<Verdict> v = new ArrayList<>();
    double best = 0;
    String bestName = "-";
    for (Bench.Run run : r.runs()) {
      double x = run.rate() == 0 ? run.windowThroughput() : run.sustained() ? run.rate() : 0;
      if (x > best) {
        best = x;
        bestName = run.name();
      }
    }
    v.add(new Verdict(">= 10,000 payments/s sustained end to end", n0(best) + "/s (" + bestName + ")",
        best >= 10_000 ? "yes" : "no"));
    v.add(latency(r, 10_000, 100));
    v.add(latency(r, 1_000, 25));
    Bench.Parts p = r.parts();
    v.add(new Verdict("relay >= 60% of raw pipelined XADD", pct(p.relay() / p.rawXadd()),
        p.relay() >= 0.6 * p.rawXadd() ? "yes" : "no"));
    v.add(new Verdict("relay >= 60% of a hand-written relay loop (same SQL + XADD)", pct(p.relay() / p.loop()),
        p.relay() >= 0.6 * p.loop() ? "yes" : "no"));
    v.add(new Verdict("consumer >= 50% of raw batched marker + charge insert", pct(p.consumer() / p.rawConsumer()),
        p.consumer() >= 0.5 * p.rawConsumer() ? "yes" : "no"));
    if (r.retained() != null && r.empty() != null) {
      double ratio = r.retained().endToEnd() / r.empty().endToEnd();
      v.add(new Verdict(String.format(">= 90%% of empty-outbox throughput with %,d rows retained",
          r.config().retained()), pct(ratio), ratio >= 0.9 ? "yes" : "no"));
    } else {
      v.add(new Verdict(">= 90% of empty-outbox throughput with 1,000,000 rows retained", "not run (--retained)",
          "-"));
    }
    if (r.overload() != null) {
      Bench.Run o = r.overload();
      v.add(new Verdict("memory flat when producers outrun consumers tenfold", String.format("peak backlog %,d, peak"
          + " heap %d MiB, heap after GC at most %d MiB, in flight <= %,d", o.peakBacklog(), o.peakHeap() >> 20,
          o.peakHeapAfterGc() >> 20, r.config().workers() * r.config().batch()), "see chart"));
    }
    return v;
  }

  private static Verdict latency(Bench.Result r, double rate, double limitMs) {
    String target = String.format("p99 commit-to-charge <= %.0f ms at %,.0f/s", limitMs, rate);
    for (Bench.Run run : r.runs()) {
      if (run.rate() == rate) {
        return new Verdict(target, String.format(Locale.ROOT, "p99 %.1f ms (%s)", run.p99(),
            run.sustained() ? "rate sustained" : "rate NOT sustained"),
            run.p99() <= limitMs && run.sustained() ? "yes" : "no");
      }
    }
    return new Verdict(target, "not run (--rate " + (long) rate + ")", "-");
  }

  private static final class Sample2 {
    double[] t;
    double[] heap;
    double[] afterGc;
    double[] outbox;
    double[] stream;
    double[] pending;

    static Sample2 of(List<Bench.Sample> samples) {
      Sample2 s = new Sample2();
      int n = samples.size();
      s.t = new double[n];
      s.heap = new double[n];
      s.afterGc = new double[n];
      s.outbox = new double[n];
      s.stream = new double[n];
      s.pending = new double[n];
      for (int i = 0; i < n; i++) {
        Bench.Sample x = samples.get(i);
        s.t[i] = x.t();
        s.heap[i] = x.heapUsed() / (double) (1 << 20);
        s.afterGc[i] = x.heapAfterGc() / (double) (1 << 20);
        s.outbox[i] = Math.max(0, x.unpublished());
        s.stream[i] = Math.max(0, x.streamBacklog());
        s.pending[i] = Math.max(0, x.pending());
      }
      return s;
    }
  }

  private static Svg.Series perSecond(String name, List<Bench.Sample> samples, boolean charged) {
    int n = samples.size() - 1;
    double[] t = new double[n];
    double[] y = new double[n];
    for (int i = 0; i < n; i++) {
      Bench.Sample a = samples.get(i);
      Bench.Sample b = samples.get(i + 1);
      t[i] = b.t();
      double dt = Math.max(1e-3, b.t() - a.t());
      y[i] = ((charged ? b.charged() : b.paid()) - (charged ? a.charged() : a.paid())) / dt;
    }
    return new Svg.Series(name, t, y);
  }

  private static Path svg(Path dir, String name, String content) throws IOException {
    Path f = dir.resolve(name);
    Files.writeString(f, content, StandardCharsets.UTF_8);
    return f;
  }

  private static String partRow(String what, double rate, String baseline, double base) {
    return "| " + what + " | " + n0(rate) + " | " + baseline + " | " + n0(base) + " | " + pct(rate / base) + " |\n";
  }

  private static void row(StringBuilder md, String k, String v) {
    md.append("| ").append(k).append(" | ").append(v.replace("|", "\\|")).append(" |\n");
  }

  static String n0(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format("%,.0f", v);
  }

  static String fmt1(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
  }

  static String pct(double ratio) {
    return Double.isNaN(ratio) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * ratio);
  }
}
