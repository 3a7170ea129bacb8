package dev.handoff.benchmarks.ledger;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code summary.tsv}: one header line, then one line per run (handoff and raw at each asked rate, in the order they
 * ran), so that figures can be compared and taken medians of over several invocations without parsing the report.
 * Rates per second, latencies in milliseconds, commits per payment, round trips per consumer batch; {@code NaN}
 * where a figure does not exist (no batches, say).
 */
final class SummaryTsv {

  static final String FILE = "summary.tsv";

  static final List<String> COLUMNS = List.of("pipeline", "rate_asked", "paid", "end_to_end_per_s",
      "window_charged_per_s", "p50_ms", "p99_ms", "producer_commits_per_payment", "relay_commits_per_payment",
      "consumer_commits_per_payment", "counted_commits_per_payment", "database_commits_per_payment",
      "relay_counted", "relay_rollbacks", "consumer_batches", "consumer_batch_size", "xreadgroup_per_batch",
      "xack_per_batch", "xautoclaim_per_batch", "xclaim_per_batch", "db_commits_per_batch", "waits_from_commit",
      "producer_tx_p50_ms", "producer_tx_p99_ms", "to_stream_p50_ms", "to_stream_p99_ms", "to_consumer_p50_ms",
      "to_consumer_p99_ms", "consumer_tx_p50_ms", "consumer_tx_p99_ms", "machine_cpu_ms_per_payment",
      "jvm_cpu_ms_per_payment", "machine_busy_cores");

  private SummaryTsv() {}

  static String of(Bench.Result r) {
    List<String> lines = new ArrayList<>();
    lines.add(String.join("\t", COLUMNS));
    for (int i = 0; i < r.raw().size(); i++) {
      lines.add(line("handoff", r.runs().get(i)));
      lines.add(line("raw", r.raw().get(i).run()));
    }
    return String.join("\n", lines) + "\n";
  }

  private static String line(String pipeline, Bench.Run run) {
    Bench.Commits c = run.commits();
    ConsumerTrips t = run.trips();
    RowWaits w = run.waits();
    long p = run.paid();
    List<String> v = List.of(pipeline, num(run.rate()), Long.toString(p), num(run.drained() ? run.endToEnd()
        : Double.NaN), num(run.windowThroughput()), num(run.p50()), num(run.p99()), per(c.producer(), p),
        per(c.relay(), p), per(c.consumer(), p), per(c.counted(), p), per(c.database(), p),
        Boolean.toString(c.relayCounted()), Long.toString(c.relayRollbacks()), Long.toString(t.batches()),
        num(t.meanBatch()), num(t.perBatch("xreadgroup")), num(t.perBatch("xack")), num(t.perBatch("xautoclaim")),
        num(t.perBatch("xclaim")), num(t.databaseCommitsPerBatch()), Boolean.toString(w.fromCommit()),
        num(w.producerTransaction().p50()), num(w.producerTransaction().p99()), num(w.toStream().p50()),
        num(w.toStream().p99()), num(w.toConsumer().p50()), num(w.toConsumer().p99()),
        num(w.consumerTransaction().p50()), num(w.consumerTransaction().p99()),
        num(run.cpu().machineMsPerPayment()), num(run.cpu().jvmMsPerPayment()), num(run.cpu().machineCores()));
    return String.join("\t", v);
  }

  private static String per(long commits, long payments) {
    return num(RawPipeline.perPayment(commits, payments));
  }

  private static String num(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? "NaN" : String.format(Locale.ROOT, "%.4f", v)
        .replaceAll("0+$", "").replaceAll("\\.$", "");
  }
}
