package dev.handoff.benchmarks.ledger;

import java.util.List;
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
    md.append(cpuSection(r));
    md.append(waitsSection(r));
    md.append(jitSection(r));
    md.append("\n### Database commits per payment\n\n");
    md.append("| rate | run | payments | producer | relay | consumer | total counted | pg_stat_database delta |"
        + " exact counts |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      Bench.RawRun raw = r.raw().get(i);
      md.append(commitRow(rate(r.runs().get(i)), "handoff", r.runs().get(i), "-"));
      md.append(commitRow(rate(raw.run()), "raw", raw.run(), String.format("%,d charge rows for %,d payments"
          + " (%s)", raw.chargeRows(), raw.chargedPayments(), raw.exact() ? "each charged once" : "NOT exact")));
    }
    md.append("\n*producer*: commits the producer threads issued (counted in both runs). *relay*: for handoff, every"
        + " transaction the relay caused, counted through a wrapper of its data source (`CountingDataSource`) the way"
        + " PostgreSQL counts them: each statement run in auto-commit is one, each `commit()` of a transaction that"
        + " ran a statement is one; that covers its cycles, lease renewals, maintenance and its LISTEN connection"
        + " (the notification data source is the same one); rollbacks, counted apart, are shown when there were any"
        + " (the LISTEN connection's session check rolls back one read-only transaction each time it connects);"
        + " for the raw loop, its commits, empty polls included. *consumer*: for handoff, every transaction of the"
        + " consumer's, counted the same way (its batches, and any upkeep); for raw, its batch commits. *total"
        + " counted*: the three. *pg_stat_database delta*: the cross-check, `xact_commit` over the run less the"
        + " sampler's own transactions (counted too); it also holds what no counter sees, HikariCP's validation of a"
        + " connection idle for more than 0.5 s when it is borrowed (pgjdbc's `isValid` sends an empty query, which"
        + " PostgreSQL counts as a transaction) and the driver's internal queries, and since PostgreSQL flushes each"
        + " backend's counters at most once a second it can miss about a second of commits.\n\n");
    md.append(tripsSection(r));
    return md.toString();
  }

  /** The CPU each run took per payment, handoff's beside raw's. */
  private static String cpuSection(Bench.Result r) {
    StringBuilder md = new StringBuilder("\n### CPU per payment\n\n");
    md.append("| rate | machine CPU ms per payment, handoff / raw | ratio | this JVM's, handoff / raw | busy cores,"
        + " handoff / raw |\n|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      CpuUse h = r.runs().get(i).cpu();
      CpuUse w = r.raw().get(i).run().cpu();
      md.append("| ").append(rate(r.runs().get(i))).append(" | ").append(f3(h.machineMsPerPayment()))
          .append(" / ").append(f3(w.machineMsPerPayment())).append(" | ")
          .append(ratio(h.machineMsPerPayment() / w.machineMsPerPayment())).append(" | ")
          .append(f3(h.jvmMsPerPayment())).append(" / ").append(f3(w.jvmMsPerPayment())).append(" | ")
          .append(f3(h.machineCores())).append(" / ").append(f3(w.machineCores())).append(" |\n");
    }
    md.append("\nFrom the producers' start to the last charge (the end of the drain), from `/proc/stat` (every"
        + " process on the machine: this JVM with its producers, relay and consumers, producer processes of their"
        + " own, and PostgreSQL and Redis where they run here) and `/proc/self/stat` (this JVM): user, nice, system,"
        + " irq and softirq time, divided by the run's payments; busy cores is the machine's CPU over that span. On a"
        + " machine whose cores are all taken, a pipeline's latency grows with the share of them it takes. Anything"
        + " else running on the machine is counted too.\n");
    return md.toString();
  }

  /** Where each run's rows waited, handoff's beside raw's, from the runs' tables. */
  private static String waitsSection(Bench.Result r) {
    StringBuilder md = new StringBuilder("\n### Where a row waits\n\n");
    boolean fromCommit = r.runs().stream().allMatch(run -> run.waits().fromCommit());
    md.append("| rate | run | rows | producer's transaction p50 / p99 ms | "
        + (fromCommit ? "from its commit" : "from its transaction's start")
        + " to its stream ID p50 / p99 ms | then to the consumer's transaction p50 / p99 ms"
        + " | the consumer's transaction p50 / p99 ms |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      md.append(waitsRow(rate(r.runs().get(i)), "handoff", r.runs().get(i).waits()));
      md.append(waitsRow(rate(r.raw().get(i).run()), "raw", r.raw().get(i).run().waits()));
    }
    md.append("\nRead from each run's tables before they were dropped, for the rows created after the warm-up, all on"
        + " the database server's clock: the producer's transaction (`outbox.created_at`, its start, to the commit"
        + " timestamp of its `payment` row), from that commit to the row's stream ID (`stream_ms`), then to the"
        + " consumer's transaction (`inbox.processed_at`, its start), and that transaction (to the commit timestamp of"
        + " its inbox marker). Commit timestamps need `track_commit_timestamp` (on in the embedded server); without"
        + " them the second leg runs from the transaction's start and the transactions show -. handoff's relay"
        + " assigns the ID in its cycle's transaction, before that commits and before the write to Redis, so its"
        + " third leg holds that commit and the write; the raw loop takes the ID from its clock right before its"
        + " XADD, after its select. The second leg is mostly the wait for the relay's next look at the outbox.\n");
    return md.toString();
  }

  private static String waitsRow(String rate, String pipeline, RowWaits w) {
    return "| " + rate + " | " + pipeline + " | " + String.format("%,d", w.rows()) + " | "
        + leg(w.producerTransaction()) + " | " + leg(w.toStream()) + " | " + leg(w.toConsumer()) + " | "
        + leg(w.consumerTransaction()) + " |\n";
  }

  private static String leg(RowWaits.Leg l) {
    return Double.isNaN(l.p50()) ? "-" : BenchReport.fmt1(l.p50()) + " / " + BenchReport.fmt1(l.p99());
  }

  /** How long the JIT compiled during each measured run: how warm the run was. */
  private static String jitSection(Bench.Result r) {
    StringBuilder md = new StringBuilder("\n### JIT compilation during the measured runs\n\n");
    md.append("| run | seconds | compiler CPU ms | cores |\n|---|---|---|---|\n");
    for (Jit.During d : r.jit()) {
      md.append("| ").append(d.what()).append(" | ").append(BenchReport.fmt1(d.seconds())).append(" | ")
          .append(BenchReport.n0(d.cpuMillis())).append(" | ").append(String.format(Locale.ROOT, "%.2f", d.cores()))
          .append(" |\n");
    }
    md.append("\nThe CPU of this JVM's JIT compiler threads while each run, its set-up and its drain ran, and that CPU"
        + " in cores over the run. The warm-up rounds before the first run repeat until the compilers use under "
        + Bench.QUIET_JIT_CORES + " of a core through a round (rounds: at least " + Math.min(Bench.MIN_WARM_ROUNDS,
        r.config().maxWarmUpRounds()) + ", at most " + r.config().maxWarmUpRounds() + ", in the log): a compiler"
        + " thread still at work takes its CPU from the run it overlaps. Producer processes of their own warm up"
        + " apart, and are not counted here.\n");
    return md.toString();
  }

  /** What each run's consumer sent per batch, from Redis's command counts and the counted batches. */
  private static String tripsSection(Bench.Result r) {
    StringBuilder md = new StringBuilder("### Consumer round trips per batch\n\n");
    md.append("| rate | run | batches | mean batch | XREADGROUP / batch | XACK / batch | XAUTOCLAIM / batch | database"
        + " commits / batch | other consumer calls (run) | shared, not attributed (run) |\n"
        + "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r.raw().size(); i++) {
      md.append(tripsRow(r.runs().get(i), "handoff"));
      md.append(tripsRow(r.raw().get(i).run(), "raw"));
    }
    md.append("\nFrom `INFO commandstats` read before and after each run (server-wide calls per command), divided by"
        + " the consumer's batches (handoff: `ConsumerListener.batchCommitted`; raw: its loop's commits, one per"
        + " batch that held entries). Redis is shared with the relay and the run's sampler, so only the commands"
        + " neither of them sends are attributed to the consumer: `XREADGROUP`, `XACK`, `XAUTOCLAIM` and"
        + " `XGROUP CREATE` (sent by the consumer), `XCLAIM` and `XGROUP DELCONSUMER` (called only inside the"
        + " consumer's lease-renewal, retry and clean-up scripts, so counted per entry, not per round trip)."
        + " `EVALSHA` (the relay's publish and trim scripts, the consumer's scripts, the sampler's stream count) and"
        + " `XPENDING` (inside those scripts and the sampler's status) are shared: their run totals are shown, not"
        + " attributed. Reads that come back empty (a blocking read that times out) count as calls: at low rates"
        + " they raise `XREADGROUP` per batch. handoff acknowledges all the streams of a batch in one pipelined round"
        + " trip, so its `XACK` calls per batch (one per stream in the batch) are more than its XACK round trips"
        + " (one per batch); the raw consumer sends one `XACK` per stream, each a round trip.\n\n");
    return md.toString();
  }

  private static String tripsRow(Bench.Run x, String run) {
    ConsumerTrips t = x.trips();
    StringBuilder other = new StringBuilder();
    t.attributed().forEach((command, n) -> {
      if (n > 0 && !List.of("xreadgroup", "xack", "xautoclaim").contains(command)) {
        other.append(other.length() == 0 ? "" : ", ").append(commandName(command)).append(' ').append(n);
      }
    });
    StringBuilder shared = new StringBuilder();
    t.shared().forEach((command, n) -> shared.append(shared.length() == 0 ? "" : ", ")
        .append(commandName(command)).append(' ').append(n));
    return "| " + rate(x) + " | " + run + " | " + String.format("%,d", t.batches()) + " | " + f1(t.meanBatch())
        + " | " + f2(t.perBatch("xreadgroup")) + " | " + f2(t.perBatch("xack")) + " | "
        + f2(t.perBatch("xautoclaim")) + " | " + f2(t.databaseCommitsPerBatch()) + " | "
        + (other.length() == 0 ? "-" : other) + " | " + (shared.length() == 0 ? "-" : shared) + " |\n";
  }

  private static String commitRow(String rate, String run, Bench.Run x, String exact) {
    Bench.Commits c = x.commits();
    long p = x.paid();
    String relay = per(c.relay(), p) + (c.relayCounted() ? "" : " (derived)")
        + (c.relayRollbacks() > 0 ? String.format(" (+%,d rollback%s)", c.relayRollbacks(),
            c.relayRollbacks() == 1 ? "" : "s") : "");
    return "| " + rate + " | " + run + " | " + String.format("%,d", p) + " | " + per(c.producer(), p) + " | "
        + relay + " | " + per(c.consumer(), p) + " | " + per(c.counted(), p) + (c.relayCounted() ? "" : " (no relay)")
        + " | " + per(c.database(), p) + " | " + exact + " |\n";
  }

  /** {@code xgroup|create} as {@code XGROUP CREATE}: a bare pipe would split the table's cell. */
  private static String commandName(String command) {
    return command.toUpperCase(Locale.ROOT).replace('|', ' ');
  }

  private static String f1(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
  }

  private static String f2(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
  }

  private static String f3(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f", v);
  }

  private static String per(long commits, long payments) {
    return f3(RawPipeline.perPayment(commits, payments));
  }

  private static String ratio(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%.2fx", v);
  }

  static String rate(Bench.Run run) {
    return run.rate() == 0 ? "flat out" : String.format("%,.0f/s", run.rate());
  }
}
