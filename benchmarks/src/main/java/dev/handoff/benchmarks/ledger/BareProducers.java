package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The producer side's baseline: the same producers as an end-to-end run, flat out for the same duration, committing
 * the payment rows alone (no outbox row, no relay, no consumer). What an application's appending transactions would
 * commit per second without handoff's append, measured over the producers' whole time as an end-to-end run's produced
 * rate is.
 */
record BareProducers(LedgerServers servers, Bench.Config config, TimedLog log, String jdbcUrl) {

  /** Runs in {@code schema}, which must be freshly prepared; returns payments committed per second. */
  double run(String schema, String idPrefix) {
    RawProducerBaseline inserts = new RawProducerBaseline(schema, config.shards());
    AtomicLong paid = new AtomicLong();
    ProducerRun producers = ProducerRun.start(config, jdbcUrl, ProducerProcess.Mode.BARE, schema, idPrefix, 0,
        batch -> {
          try (Connection tx = servers.dataSource().getConnection()) {
            tx.setAutoCommit(false);
            inserts.insertPayments(tx, batch);
            tx.commit();
          }
        }, (base, count, now) -> paid.addAndGet(count));
    long t0 = producers.from();
    producers.join();
    double seconds = (System.nanoTime() - t0) / 1e9;
    if (producers.failure() != null) {
      throw new LedgerException("bare producer failed: " + producers.failure(), producers.failure());
    }
    // As an end-to-end run's produced rate: every payment over the producers' whole time.
    double rate = paid.get() / seconds;
    log.event("bare producers (%s, payment rows only, flat out): %,.0f payments/s (%,d in %.1fs)",
        config.shape().describe(), rate, paid.get(), seconds);
    return rate;
  }
}
