package dev.handoff.benchmarks.ledger;

import dev.handoff.testing.tools.TimedLog;

/** The lines every end-to-end and raw run logs about its database commits and its consumer's round trips. */
final class RunLog {

  private RunLog() {}

  /**
   * Two lines: commits per payment (counted, and the database's delta beside them), then what the consumer sent
   * per batch.
   */
  static void commitsAndTrips(TimedLog log, Bench.Run run) {
    Bench.Commits c = run.commits();
    long p = run.paid();
    log.event("  commits per payment (%s): producer %.3f, relay %.3f%s%s, consumer %.3f; counted %.3f,"
        + " pg_stat_database %.3f", run.name(), per(c.producer(), p), per(c.relay(), p),
        c.relayCounted() ? "" : " (derived)", c.relayRollbacks() > 0 ? " (+" + c.relayRollbacks() + " rollback(s))"
            : "", per(c.consumer(), p), per(c.counted(), p), per(c.database(), p));
    ConsumerTrips t = run.trips();
    log.event("  consumer per batch (%s): %,d batches of %.1f entries; XREADGROUP %.2f, XACK %.2f, XAUTOCLAIM %.2f,"
        + " XCLAIM (in scripts) %.2f, database commits %.2f", run.name(), t.batches(), t.meanBatch(),
        t.perBatch("xreadgroup"), t.perBatch("xack"), t.perBatch("xautoclaim"), t.perBatch("xclaim"),
        t.databaseCommitsPerBatch());
  }

  private static double per(long commits, long payments) {
    return RawPipeline.perPayment(commits, payments);
  }
}
