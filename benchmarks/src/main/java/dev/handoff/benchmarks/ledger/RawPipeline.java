package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.Payment;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The whole job without handoff, the baseline of an end-to-end run: the same producers (count, payments per
 * transaction, pacing) inserting the payment and a plain outbox row in one transaction, {@link RawRelayLoop} and
 * {@link RawConsumerLoop}, for the same duration, then the drain. Timed and analysed as the end-to-end run is (same
 * clock points, same {@link RunAnalysis}), with every commit counted in process.
 */
record RawPipeline(LedgerServers servers, Bench.Config config, TimedLog log, String jdbcUrl) {

  /** Runs in {@code schema} and {@code prefix}, which must be freshly prepared; counts the charges before returning. */
  Bench.RawRun run(String name, String schema, String prefix, String idPrefix, double rate) {
    Duration duration = config.duration();
    log.event("%s: raw pipeline (no handoff code), %s for %ds, producers %s, one relay loop,"
        + " %d consumer thread(s) x batch %d, %d shards", name, rate == 0 ? "flat out"
        : String.format("%,.0f payments/s", rate), duration.toSeconds(), config.shape().describe(),
        config.workers(), config.batch(), config.shards());
    long origin = System.nanoTime();
    Timings timings = new Timings(origin);
    AtomicLong paid = new AtomicLong();
    AtomicLong producerCommits = new AtomicLong();
    RawProducerBaseline inserts = new RawProducerBaseline(schema, config.shards());
    RawRelayLoop relay = new RawRelayLoop(servers.dataSource(), servers.redis(), schema, prefix, config.shards());
    RawConsumerLoop consumers = new RawConsumerLoop(servers.dataSource(), servers.redis(), schema, prefix,
        config.shards(), config.workers(), config.batch(), timings);
    RedisCommandStats redisBefore = RedisCommandStats.read(servers.redis());
    consumers.createGroups();
    // Measurement only, as in the handoff run: a never-started consumer of the raw group, for its pending count, on
    // a data source that counts the sampler's transactions.
    CountingDataSource samplerDb = new CountingDataSource(servers.dataSource());
    StreamConsumer probe = Probes.stream(samplerDb, servers.redisSpec(), schema, prefix, config.topic(),
        RawConsumerLoop.GROUP).statusScanLimit(1).build();
    relay.start();
    consumers.start();
    RunSampler sampler = new RunSampler(samplerDb, probe, schema, origin, paid::get, consumers::charged, log);
    sampler.start();

    CpuUse.Mark cpuFrom = CpuUse.mark();
    ProducerRun producers = ProducerRun.start(config, jdbcUrl, ProducerProcess.Mode.RAW, schema, idPrefix, rate,
        batch -> pay(inserts, batch), (base, count, now) -> {
          for (int i = 0; i < count; i++) {
            timings.committed(base + i, now);
          }
          paid.addAndGet(count);
          producerCommits.incrementAndGet();
        });
    long t0 = producers.from();
    producers.join();
    long stopped = System.nanoTime();
    long total = paid.get();
    long deadline = stopped + Math.max(Duration.ofSeconds(60).toNanos(), 4 * duration.toNanos());
    boolean drained = false;
    while (producers.failure() == null && relay.failure() == null && consumers.failure() == null
        && System.nanoTime() < deadline) {
      if (consumers.charged() >= total) {
        drained = true;
        break;
      }
      BenchThreads.pause(5);
    }
    double drainSeconds = (System.nanoTime() - stopped) / 1e9;
    CpuUse.Mark cpuTo = CpuUse.mark();
    List<Bench.Sample> samples = sampler.finish();
    consumers.stop();
    relay.stop();
    probe.close();
    Throwable failure = producers.failure() != null ? producers.failure() : relay.failure() != null
        ? relay.failure() : consumers.failure();
    if (failure != null) {
      throw new LedgerException("raw pipeline failed: " + failure, failure);
    }
    log.event("  producers stopped after %,d payments; %s in %.2fs", total, drained ? "every one charged"
        : "NOT drained (" + consumers.charged() + " charged)", drainSeconds);
    // The raw consumer commits once per batch that held entries, and only then: its commits are its batches.
    ConsumerTrips trips = ConsumerTrips.of(consumers.commits(), consumers.charged(), consumers.commits(),
        RedisCommandStats.read(servers.redis()).since(redisBefore));
    Bench.Run run = RunAnalysis.analyse(new RunAnalysis.Measured(name, rate, 0, timings, t0 - origin,
        stopped - origin, total, consumers.charged(), 0, drainSeconds, drained, samples, producerCommits.get(),
        relay.commits(), 0, consumers.commits(), sampler.ownCommits(), trips), config.warmupSeconds())
        .with(RowWaits.read(servers.dataSource(), schema, idPrefix, RawConsumerLoop.GROUP,
            config.warmupSeconds()), cpuFrom.to(cpuTo, total));
    long[] counts = charges(schema);
    Bench.RawRun raw = new Bench.RawRun(run, counts[0], counts[1]);
    log.event("  => %s: produced %,.0f/s, charged %,.0f/s, end to end %,.0f/s; commit-to-charge p50 %.1f ms"
        + " p99 %.1f ms", name, run.producedRate(), run.windowThroughput(), run.drained() ? run.endToEnd() : 0,
        run.p50(), run.p99());
    RunLog.commitsAndTrips(log, run);
    log.printf("e2e %s: payments %d charge rows %d charged payments %d%n", name, total, raw.chargeRows(),
        raw.chargedPayments());
    return raw;
  }

  static double perPayment(long commits, long payments) {
    return commits < 0 || payments == 0 ? Double.NaN : commits / (double) payments;
  }

  /** One producer transaction: the payments and their outbox rows, committed. */
  private void pay(RawProducerBaseline inserts, List<Payment> batch) throws SQLException {
    try (Connection tx = servers.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      inserts.insert(tx, batch);
      tx.commit();
    }
  }

  /** The raw group's charge rows (history excluded) and the distinct payments they charge. */
  private long[] charges(String schema) {
    try (Connection c = servers.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT payment_id) FROM " + schema + ".charge"
            + " WHERE ledger = '" + RawConsumerLoop.GROUP + "'")) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    } catch (SQLException e) {
      throw new LedgerException("could not count the raw pipeline's charges: " + e.getMessage(), e);
    }
  }
}
