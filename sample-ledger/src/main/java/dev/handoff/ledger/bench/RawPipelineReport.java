package dev.handoff.ledger.bench;

import java.util.Locale;

/** The report's section comparing each end-to-end run with the raw pipeline run right after it at the same rate. */
final class RawPipelineReport {

  private RawPipelineReport() {}

  static String section(Bench.Result r) {
    StringBuilder md = new StringBuilder("## End to end against a raw pipeline (same rates, servers and settings)\n\n");
    md.append("After each end-to-end run, the same job with no handoff code, in a schema and key prefix of its own:"
        + " the same producers (count, payments per transaction, pacing) insert the payment and a plain outbox row"
        + " in one transaction; one relay loop selects up to 1,000 unpublished rows, XADDs them pipelined with"
        + " explicit IDs (one stream per shard), marks them published and commits (an empty poll commits too, then"
        + " waits " + RawRelayLoop.IDLE_MILLIS + " ms); " + r.config().workers() + " consumer thread(s) XREADGROUP,"
        + " insert the inbox markers and charges of the batch in one transaction, commit, then XACK. Same clock"
        + " points for latency. Ratios are handoff / raw.\n\n");
    md.append("| rate | handoff end to end /s | raw end to end /s | ratio | handoff charged /s | raw charged /s | ratio"
        + " | p50 ms handoff / raw | ratio | p99 ms handoff / raw | ratio |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      Bench.Run h = r.runs().get(i);
      Bench.Run w = r.raw().get(i).run();
      md.append("| ").append(rate(h)).append(" | ").append(BenchReport.n0(h.endToEnd())).append(" | ")
          .append(BenchReport.n0(w.endToEnd())).append(" | ").append(BenchReport.pct(h.endToEnd() / w.endToEnd()))
          .append(" | ").append(BenchReport.n0(h.windowThroughput())).append(" | ")
          .append(BenchReport.n0(w.windowThroughput())).append(" | ")
          .append(BenchReport.pct(h.windowThroughput() / w.windowThroughput())).append(" | ")
          .append(BenchReport.fmt1(h.p50())).append(" / ").append(BenchReport.fmt1(w.p50())).append(" | ")
          .append(ratio(h.p50() / w.p50())).append(" | ").append(BenchReport.fmt1(h.p99())).append(" / ")
          .append(BenchReport.fmt1(w.p99())).append(" | ").append(ratio(h.p99() / w.p99())).append(" |\n");
    }
    md.append("\n### Database commits per payment\n\n");
    md.append("| rate | run | payments | producer | relay | consumer | total counted | pg_stat_database delta |"
        + " exact counts |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      Bench.RawRun raw = r.raw().get(i);
      md.append(commitRow(rate(r.runs().get(i)), "handoff", r.runs().get(i), "-"));
      md.append(commitRow(rate(raw.run()), "raw", raw.run(), String.format("%,d charge rows for %,d payments"
          + " (%s)", raw.chargeRows(), raw.chargedPayments(), raw.exact() ? "each charged once" : "NOT exact")));
    }
    md.append("\n*producer*: commits the producer threads issued (counted in both runs); *consumer*: handoff's"
        + " batch transactions as its listener reports them (`ConsumerListener.batchCommitted`), the raw consumers'"
        + " commits counted; *relay*: counted for the raw loop, empty polls included; for handoff **derived**: the"
        + " `pg_stat_database.xact_commit` delta over the run less the sampler's own queries, the producers' and the"
        + " consumer's batch commits, so it also holds any other transaction in the database during the run (the"
        + " consumer's own bookkeeping, Hikari's connection checks). PostgreSQL flushes each backend's counters at"
        + " most once a second, so the delta (and the derived figure) can miss about a second of commits; the raw"
        + " run's delta column shows how close it comes to an exact count.\n\n");
    return md.toString();
  }

  private static String commitRow(String rate, String run, Bench.Run x, String exact) {
    Bench.Commits c = x.commits();
    long p = x.paid();
    String relay = per(c.relay(), p) + (c.relayCounted() ? "" : " (derived)");
    long counted = c.relayCounted() ? c.producer() + c.relay() + c.consumer() : c.producer() + c.consumer();
    return "| " + rate + " | " + run + " | " + String.format("%,d", p) + " | " + per(c.producer(), p) + " | "
        + relay + " | " + per(c.consumer(), p) + " | " + per(counted, p) + (c.relayCounted() ? "" : " (no relay)")
        + " | " + per(c.database(), p) + " | " + exact + " |\n";
  }

  private static String per(long commits, long payments) {
    double v = RawPipeline.perPayment(commits, payments);
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f", v);
  }

  private static String ratio(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.2fx", v);
  }

  private static String rate(Bench.Run run) {
    return run.rate() == 0 ? "flat out" : String.format("%,.0f/s", run.rate());
  }
}
