package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentService;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import dev.handoff.relay.Relay;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One end-to-end run: producers through the payment service at a rate (or flat out) for the configured duration, a
 * relay and a ledger consumer, sampled once a second; then, if asked, the drain until every payment is charged. The
 * commit of each payment and of its charge are timed in this JVM, for {@link RunAnalysis}. The relay, the consumer
 * and the sampler each get a {@link CountingDataSource} of their own, so that each one's transactions are counted
 * exactly; Redis's command counts are read before and after, for the consumer's calls per batch.
 */
record EndToEnd(LedgerServers servers, Bench.Config config, TimedLog log, String jdbcUrl) {

  /**
   * What to run.
   *
   * @param idPrefix starts the payment IDs (each ends with its sequence number), so that runs never share one
   * @param consumerLimit entries per second the consumer may settle, 0 for no limit
   * @param drainAfter whether to wait, after the producers stop, until every payment is charged
   */
  record Spec(String name, String schema, String prefix, String idPrefix, double rate, double consumerLimit,
      boolean drainAfter) {}

  Bench.Run run(Spec spec) {
    Duration duration = config.duration();
    log.event("%s: %s for %ds, producers %s, relay, %d worker(s) x batch %d, %d shards",
        spec.name(), spec.rate() == 0 ? "flat out" : String.format("%,.0f payments/s", spec.rate()),
        duration.toSeconds(), config.shape().describe(), config.workers(), config.batch(), config.shards());
    long origin = System.nanoTime();
    Timings timings = new Timings(origin);
    AtomicLong paid = new AtomicLong();
    AtomicLong producerCommits = new AtomicLong();
    PaymentService service = new PaymentService(servers.dataSource(), spec.schema(), config.topic());
    CountingDataSource relayDb = new CountingDataSource(servers.dataSource());
    CountingDataSource consumerDb = new CountingDataSource(servers.dataSource());
    CountingDataSource samplerDb = new CountingDataSource(servers.dataSource());
    RedisCommandStats redisBefore = RedisCommandStats.read(servers.redis());
    Relay relay = config.relay(relayDb, servers, spec.schema(), spec.prefix(), "bench-relay");
    ChargeRecorder charges = new ChargeRecorder(timings, spec.consumerLimit());
    LedgerConsumer consumer = config.ledgerConsumer(on(consumerDb), spec.schema(), spec.prefix(),
        "bench-" + spec.idPrefix().replace("-", ""), charges);
    StreamConsumer probe = Probes.stream(samplerDb, servers.redisSpec(), spec.schema(), spec.prefix(), config.topic(),
        LedgerConsumer.DEFAULT_GROUP).statusScanLimit(1).build();
    relay.start();
    consumer.start();
    RunSampler sampler = new RunSampler(samplerDb, probe, spec.schema(), origin, paid::get, charges::charged, log);
    sampler.start();

    CpuUse.Mark cpuFrom = CpuUse.mark();
    ProducerRun producers = ProducerRun.start(config, jdbcUrl, ProducerProcess.Mode.HANDOFF, spec.schema(),
        spec.idPrefix(), spec.rate(), service::payAll, (base, count, now) -> {
          for (int i = 0; i < count; i++) {
            timings.committed(base + i, now);
          }
          paid.addAndGet(count);
          producerCommits.incrementAndGet();
        });
    long t0 = producers.from();
    producers.join();
    long stopped = System.nanoTime();
    if (producers.failure() != null) {
      sampler.abandon();
      consumer.close(Duration.ofSeconds(5));
      relay.close(Duration.ofSeconds(1));
      probe.close();
      throw new LedgerException("producer failed: " + producers.failure(), producers.failure());
    }
    long total = paid.get();
    double drainSeconds = Double.NaN;
    boolean drained = false;
    if (spec.drainAfter()) {
      long deadline = stopped + Math.max(Duration.ofSeconds(60).toNanos(), 4 * duration.toNanos());
      while (System.nanoTime() < deadline) {
        if (charges.charged() >= total) {
          drained = true;
          break;
        }
        BenchThreads.pause(5);
      }
      drainSeconds = (System.nanoTime() - stopped) / 1e9;
      log.event("  producers stopped after %,d payments; %s in %.2fs", total, drained ? "every one charged" :
          "NOT drained (" + charges.charged() + " charged)", drainSeconds);
    }
    CpuUse.Mark cpuTo = CpuUse.mark();
    List<Bench.Sample> samples = sampler.finish();
    consumer.close(Duration.ofSeconds(10));
    relay.close(Duration.ofSeconds(5));
    probe.close();
    ConsumerTrips trips = ConsumerTrips.of(charges.batchCommits(), charges.batchEntries(), consumerDb.commits(),
        RedisCommandStats.read(servers.redis()).since(redisBefore));
    Bench.Run run = RunAnalysis.analyse(new RunAnalysis.Measured(spec.name(), spec.rate(), spec.consumerLimit(),
        timings, t0 - origin, stopped - origin, total, charges.charged(), charges.unrecorded(), drainSeconds,
        drained, samples, producerCommits.get(), relayDb.commits(), relayDb.rollbacks(), consumerDb.commits(),
        sampler.ownCommits(), trips), config.warmupSeconds()).with(RowWaits.read(servers.dataSource(),
        spec.schema(), spec.idPrefix(), LedgerConsumer.DEFAULT_GROUP, config.warmupSeconds()),
        cpuFrom.to(cpuTo, total));
    summarize(run);
    return run;
  }

  /** The same servers, with {@code dataSource} for the database. */
  private LedgerServers on(CountingDataSource dataSource) {
    return new LedgerServers(dataSource, servers.redis(), servers.redisSpec());
  }

  private void summarize(Bench.Run run) {
    log.event("  => %s: produced %,.0f/s, charged %,.0f/s (after %.0fs warm-up), end to end %,.0f/s;"
        + " commit-to-charge p50 %.1f ms p95 %.1f ms p99 %.1f ms max %.1f ms (%,d samples); db %,.0f tx/s; backlog"
        + " growth %,.0f/s; peak heap %,d MB%s", run.name(), run.producedRate(), run.windowThroughput(),
        config.warmupSeconds(), run.drained() ? run.endToEnd() : 0, run.p50(), run.p95(), run.p99(), run.max(),
        run.latencySamples(), run.dbTps(), run.backlogGrowth(), run.peakHeap() >> 20,
        run.rate() > 0 ? (run.sustained() ? "; SUSTAINED" : "; not sustained") : "");
    log.printf("e2e %s: payments %d charges %d%n", run.name(), run.paid(), run.charged());
    RunLog.commitsAndTrips(log, run);
  }
}
