package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.relay.Relay;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * The end-to-end benchmark: payments through {@link PaymentService} (payment row and outbox message in one
 * transaction), a {@link Relay} and a {@link LedgerConsumer} (inbox marker and charge in one transaction), measured
 * beside raw baselines of the same SQL shapes and a raw pipelined XADD, in the same run.
 *
 * <p>Phases: (1) components on a fixed backlog of {@code payments}: raw producer inserts, the payment service, a
 * hand-written at-least-once relay loop, a raw pipelined XADD, the relay, the ledger consumer and a raw batched insert
 * of the consumer's marker and charge; (2) end to end at each producer rate for {@code duration}, then the drain;
 * after each, the raw pipeline at the same rate ({@code RawPipeline}: the same job with no handoff code);
 * (3) optionally the scale checks: flat out with an empty outbox versus one with {@code retained} published rows, and
 * producers outrunning rate-limited consumers tenfold. Phase 1 is {@code Components}; each later run is an
 * {@code EndToEnd}, its figures from {@code RunAnalysis}.
 *
 * <p>Latency is commit to charge: {@link System#nanoTime()} right after the payment's commit returned, to
 * {@code nanoTime} when the consumer reports the charge's commit ({@link ConsumerListener#handled}); both in this JVM,
 * so one clock.
 */
public final class Bench {

  /** Settled payments each schema of the benchmark starts with; see {@link BenchFixtures#seedHistory}. */
  static final int HISTORY = 20_000;

  static final int MIN_WARM_ROUNDS = 2;
  /** The compiler threads' CPU, in cores over a warm-up round, under which the JIT counts as quiet. */
  static final double QUIET_JIT_CORES = 0.1;

  /**
   * What the benchmark runs with. {@code rate 0} is flat out. {@code outboxRetention} and {@code maintenanceInterval}
   * are the end-to-end relays' (a short retention keeps the outbox purge deleting at the append rate, to measure
   * what it costs). {@code pinned}, unless null, runs the producer processes and their backends on CPUs of their own
   * ({@link CpuPinning}). {@code serverCheckpoints} leaves checkpoints to the server's schedule instead of forcing one
   * before each run ({@link BenchFixtures#checkpoint}).
   */
  public record Config(List<Double> rates, Duration duration, List<Shape> shapes, int shards,
      int workers, int batch, int payments, long retained, boolean overload, double overloadRate, String schema,
      String keyPrefix, boolean keep, Duration outboxRetention, Duration maintenanceInterval, int wakeUps,
      CpuPinning.Split pinned, int maxWarmUpRounds, boolean serverCheckpoints) {

    public Config {
      rates = List.copyOf(rates);
      shapes = List.copyOf(shapes);
      if (rates.isEmpty() || rates.stream().anyMatch(r -> r < 0)) {
        throw new IllegalArgumentException("--rate: one or more rates >= 0 (0 = flat out)");
      }
      if (shapes.isEmpty()) {
        throw new IllegalArgumentException("--shapes: one or more, such as 32x1,64x1,4x10");
      }
      if (maxWarmUpRounds < 1) {
        throw new IllegalArgumentException("--warm-up-rounds must be at least 1, was " + maxWarmUpRounds);
      }
      if (duration.toMillis() < 1000) {
        throw new IllegalArgumentException("--duration must be at least 1s, was " + duration);
      }
      if (shards < 1 || workers < 1 || batch < 1 || payments < 100 || wakeUps < 0) {
        throw new IllegalArgumentException("--shards, --workers, --batch must be >= 1, --payments >= 100 and"
            + " --wake-ups >= 0");
      }
    }

    /** The first shape: the one the components, the scale checks and the overload use. */
    Shape shape() {
      return shapes.get(0);
    }

    /** The producer threads of the first shape (in this JVM, for the components and the overload: all of them). */
    int producers() {
      return shapes.get(0).totalSessions();
    }

    /** Payments per producer transaction of the first shape. */
    int producerBatch() {
      return shapes.get(0).perTransaction();
    }

    /** This configuration with {@code shape} first. */
    Config withShape(Shape shape) {
      return new Config(rates, duration, List.of(shape), shards, workers, batch, payments, retained, overload,
          overloadRate, schema, keyPrefix, keep, outboxRetention, maintenanceInterval, wakeUps, pinned,
          maxWarmUpRounds, serverCheckpoints);
    }

    TopicConfig topic() {
      return TopicConfig.of(PaymentEvents.TOPIC).withShards(shards);
    }

    /** Seconds before latencies and throughput count. */
    double warmupSeconds() {
      return Math.min(5, duration.toMillis() / 5000.0);
    }

    /**
     * A relay as the end-to-end runs have it, with their outbox retention and maintenance interval, on
     * {@code dataSource} (one that counts its transactions) and the servers' Redis.
     */
    Relay relay(DataSource dataSource, LedgerServers servers, String schema, String prefix, String owner) {
      return Relay.builder(dataSource, servers.redisSpec())
          .schema(schema)
          .keyPrefix(prefix)
          .topic(topic())
          .owner(owner)
          .outboxRetention(outboxRetention)
          .maintenanceInterval(maintenanceInterval)
          .build();
    }

    /** A ledger consumer with these workers and batch size, counters not persisted. */
    LedgerConsumer ledgerConsumer(LedgerServers servers, String schema, String prefix, String name,
        ConsumerListener listener) {
      return LedgerConsumer.of(StreamConsumer.builder(servers.dataSource(), servers.redisSpec())
          .schema(schema)
          .keyPrefix(prefix)
          .topic(topic())
          .group(LedgerConsumer.DEFAULT_GROUP)
          .consumerName(name)
          .workers(workers)
          .batchSize(batch)
          .block(Duration.ofMillis(500)), servers.dataSource(), false, listener);
    }
  }

  /** One sample of the timeline (once a second). */
  public record Sample(double t, long paid, long charged, long unpublished, long streamBacklog, long pending,
      long heapUsed, long heapAfterGc, long xactCommit) {}

  /** The components on a fixed backlog, payments (or entries) per second. */
  public record Parts(long n, double rawProducer, double producer, double rawXadd, double loop, double relay,
      double rawConsumer, double consumer) {}

  /** One end-to-end run. Latencies in milliseconds. */
  public record Run(String name, double rate, double consumerLimit, double seconds, long paid, long charged,
      double producedRate, double windowThroughput, double endToEnd, long latencySamples, long unrecordedCommits,
      double p50, double p95, double p99, double max, double drainSeconds, boolean drained, double dbTps,
      double backlogGrowth, long peakBacklog, long peakHeap, long peakHeapAfterGc, List<Sample> samples,
      double[] secT, double[] secP50, double[] secP99, double[] secMax, double[] secCharged, long[] histogram,
      Commits commits, ConsumerTrips trips, RowWaits waits, CpuUse cpu) {

    /** This run with what was read once it ended: where its rows waited, and the CPU it took. */
    Run with(RowWaits rowWaits, CpuUse cpuUse) {
      return new Run(name, rate, consumerLimit, seconds, paid, charged, producedRate, windowThroughput, endToEnd,
          latencySamples, unrecordedCommits, p50, p95, p99, max, drainSeconds, drained, dbTps, backlogGrowth,
          peakBacklog, peakHeap, peakHeapAfterGc, samples, secT, secP50, secP99, secMax, secCharged, histogram,
          commits, trips, rowWaits, cpuUse);
    }

    /** Whether a fixed rate was held: produced within 2%, no lasting backlog growth, drained within 2 s. */
    public boolean sustained() {
      return rate > 0 && producedRate >= 0.98 * rate && backlogGrowth <= 100 && drained && drainSeconds <= 2;
    }
  }

  /**
   * Database transactions of one run, whole run (drain included), each counted in process as PostgreSQL counts
   * them: {@code producer} the producer threads' commits; {@code relay} and {@code relayRollbacks} the relay's
   * (handoff: through a {@code CountingDataSource}, its LISTEN connection included; raw: its loop's commits, empty
   * polls included, and it never rolls back); {@code consumer} the consumer's (handoff: every transaction through a
   * {@code CountingDataSource}, batches and upkeep; raw: its batch commits). {@code database} is the
   * {@code pg_stat_database.xact_commit} delta less the sampler's own transactions, counted too: the cross-check,
   * approximate because PostgreSQL flushes each backend's counters at most once a second, and holding what no
   * counter sees (the pool's validation queries). {@code relayCounted} is false only where the relay was not counted
   * and {@code relay} is derived as {@code database - producer - consumer}.
   */
  public record Commits(long producer, long relay, long relayRollbacks, long consumer, long database,
      boolean relayCounted) {

    /** The commits counted in process: producer, relay (when counted) and consumer. */
    public long counted() {
      return producer + (relayCounted ? relay : 0) + consumer;
    }
  }

  /** The raw pipeline's run at one rate, and its exact counts from the raw schema before it was dropped. */
  public record RawRun(Run run, long chargeRows, long chargedPayments) {

    /** Every payment charged exactly once. */
    public boolean exact() {
      return chargeRows == run.paid() && chargedPayments == run.paid();
    }
  }

  /**
   * The producer side of one shape, flat out, in transactions committed per second: {@code bare} the payment
   * transactions alone (no outbox row, nothing else running); {@code raw} the raw pipeline's (payment and a plain
   * outbox row, with its relay loop and consumer running); {@code handoff} the payment service's (payment and
   * {@code Outbox.append}, with the relay and the ledger consumer running).
   */
  public record ProducerSide(Shape shape, double bare, double raw, double handoff) {}

  /** Everything measured. */
  public record Result(Environment env, Config config, Parts parts, List<Run> runs, List<RawRun> raw,
      List<ProducerSide> producerSides, Run empty, Run retained, double retainedInsertSeconds, Run overload,
      double[] wakeUpMillis, List<Jit.During> jit) {}

  /** Histogram bucket upper bounds in milliseconds (the last bucket is open). */
  static final double[] BUCKETS_MS = {1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2000,
      5000, 10_000, Double.MAX_VALUE};

  private Bench() {}

  /**
   * Runs the benchmark. The main schema and key prefix must hold no payments and no streams yet; the auxiliary ones
   * ({@code <schema>_parts}, {@code _raw}, {@code _empty}, {@code _retained}, {@code _overload} and the same
   * suffixes on the key prefix) belong to the benchmark: they are dropped before use and, unless {@code keep}, after.
   */
  public static Result run(DataSource dataSource, String jdbcUrl, UnifiedJedis redis, RedisConnectionSpec redisSpec,
      Config config, String described, PrintWriter out) {
    TimedLog log = new TimedLog(out, 7);
    LedgerServers servers = new LedgerServers(dataSource, redis, redisSpec);
    BenchFixtures fixtures = new BenchFixtures(dataSource, redis, config);
    EndToEnd endToEnd = new EndToEnd(servers, config.withShape(inProcess(config.shape())), log, jdbcUrl);

    Environment env = Environment.probe(dataSource, redis, described,
        config.serverCheckpoints() ? "`--server-checkpoints`" : null);
    log.event("%s", env.oneLine());
    fixtures.requireFresh(config.schema(), config.keyPrefix());
    LedgerMigrations.migrate(dataSource, config.schema());
    fixtures.seedHistory(config.schema(), false);

    Parts parts = new Components(servers, config, fixtures, log).measure();

    List<Run> runs = new ArrayList<>();
    List<RawRun> raw = new ArrayList<>();
    List<ProducerSide> sides = new ArrayList<>();
    List<Jit.During> jit = new ArrayList<>();
    CpuPinning pinning = config.pinned() == null ? null : CpuPinning.apply(dataSource, redis, config.pinned());
    if (pinning != null) {
      log.event("producer processes and their backends on CPUs %s; this JVM, Redis and the rest of PostgreSQL on %s",
          config.pinned().producerCpus(), config.pinned().otherCpus());
    }
    try {
      warmUp(config, servers, fixtures, log, jdbcUrl);
      runShapes(config, servers, fixtures, log, jdbcUrl, runs, raw, sides, jit);
    } finally {
      if (pinning != null) {
        pinning.close();
      }
    }

    Run empty = null;
    Run retained = null;
    double insertSeconds = 0;
    if (config.retained() > 0) {
      empty = inAux(fixtures, "empty", BenchFixtures.History.WITHOUT_OUTBOX_ROWS, (schema, prefix) -> endToEnd.run(
          new EndToEnd.Spec("flat out, empty outbox", schema, prefix, "e-", 0, 0, true)));
      String schema = fixtures.aux("retained");
      String prefix = fixtures.auxPrefix("retained");
      fixtures.prepareAux(schema, prefix, BenchFixtures.History.WITHOUT_OUTBOX_ROWS);
      long t = System.nanoTime();
      fixtures.retain(schema, config.retained());
      insertSeconds = (System.nanoTime() - t) / 1e9;
      log.event("inserted %,d published rows into %s.outbox in %.1fs (INSERT ... SELECT generate_series, VACUUM"
          + " ANALYZE)", config.retained(), schema, insertSeconds);
      retained = endToEnd.run(new EndToEnd.Spec(String.format("flat out, %,d rows retained", config.retained()),
          schema, prefix, "k-", 0, 0, true));
      fixtures.cleanUp(schema, prefix);
    }

    Run overload = null;
    if (config.overload()) {
      double rate = config.overloadRate();
      overload = inAux(fixtures, "overload", BenchFixtures.History.FULL, (schema, prefix) -> endToEnd.run(
          new EndToEnd.Spec(String.format("overload: producers %,.0f/s, consumers limited to %,.0f/s", rate,
              rate / 10), schema, prefix, "o-", rate, rate / 10, false)));
    }
    double[] wakeUps = new double[0];
    if (config.wakeUps() > 0) {
      wakeUps = inAux(fixtures, "wake", BenchFixtures.History.WITHOUT_OUTBOX_ROWS, (schema, prefix) ->
          new WakeUps(servers, config, log).measure(schema, prefix, config.wakeUps()));
    }
    return new Result(env, config, parts, runs, raw, sides, empty, retained, insertSeconds, overload, wakeUps, jit);
  }

  /**
   * Rounds of one run of each pipeline at the first shape and rate, not reported, until the JIT is quiet: the
   * measured runs then execute compiled code, as in a service that has been running. One round was not enough
   * (2026-12-06, 2,000/s, 32x1, per-thread CPU from /proc): the compiler threads still took 0.32 of a core, of two,
   * through handoff's measured run and 0.19 through raw's, because each switch between the pipelines deoptimises
   * code that the other one's profile did not cover (the driver's and Jedis's above all); after three rounds, 0.03
   * and none. The compiler threads' CPU through each measured run is in the report.
   */
  private static void warmUp(Config config, LedgerServers servers, BenchFixtures fixtures, TimedLog log,
      String jdbcUrl) {
    Config shaped = config.withShape(config.shape());
    double rate = config.rates().get(0);
    for (int round = 1; round <= config.maxWarmUpRounds(); round++) {
      List<Jit.During> spent = new ArrayList<>();
      Jit.during("warm-up", spent, () -> {
        inAux(fixtures, "warm", BenchFixtures.History.FULL, (schema, prefix) -> new EndToEnd(servers, shaped, log,
            jdbcUrl).run(new EndToEnd.Spec("warm-up (not reported)", schema, prefix, "u-", rate, 0, true)));
        return inAux(fixtures, "warmraw", BenchFixtures.History.FULL, (schema, prefix) -> new RawPipeline(servers,
            shaped, log, jdbcUrl).run("raw warm-up (not reported)", schema, prefix, "v-", rate));
      });
      Jit.During d = spent.get(0);
      log.event("warm-up round %d: the JIT's compiler threads used %,.0f ms of CPU in %.1f s (%.2f of a core)",
          round, d.cpuMillis(), d.seconds(), d.cores());
      if (round >= Math.min(MIN_WARM_ROUNDS, config.maxWarmUpRounds()) && d.cores() < QUIET_JIT_CORES) {
        return;
      }
    }
  }

  /** Each shape at each rate: handoff's run, the raw pipeline's right after it and, flat out, the bare producers. */
  private static void runShapes(Config config, LedgerServers servers, BenchFixtures fixtures, TimedLog log,
      String jdbcUrl, List<Run> runs, List<RawRun> raw, List<ProducerSide> sides, List<Jit.During> jit) {
    int i = 1;
    for (Shape shape : config.shapes()) {
      Config shaped = config.withShape(shape);
      EndToEnd shapedRun = new EndToEnd(servers, shaped, log, jdbcUrl);
      RawPipeline rawPipeline = new RawPipeline(servers, shaped, log, jdbcUrl);
      for (double rate : config.rates()) {
        String name = shape + ", " + (rate == 0 ? "flat out" : String.format("%,.0f/s", rate));
        int n = i;
        String runName = "run " + n + " (" + name + ")";
        // Each run in a fresh schema and key prefix, seeded alike, as raw's are: a run after another must not find
        // the tables and streams the one before left (dead tuples, a longer stream), which raw's never do.
        Run run = Jit.during(runName, jit, () -> inAux(fixtures, "run" + n, BenchFixtures.History.FULL,
            (schema, prefix) -> shapedRun.run(new EndToEnd.Spec(runName, schema, prefix, "r" + n + "-", rate, 0,
                true))));
        runs.add(run);
        // Right after the handoff run, on the same servers and settings, in a schema and key prefix of its own.
        String rawName = "raw run " + n + " (" + name + ")";
        RawRun rawRun = Jit.during(rawName, jit, () -> inAux(fixtures, "raw", BenchFixtures.History.FULL,
            (schema, prefix) -> rawPipeline.run(rawName, schema, prefix, "w" + n + "-", rate)));
        raw.add(rawRun);
        log.printf("end-to-end vs raw pipeline (%s): %.0f%% of raw's %,.0f/s%n", name,
            100 * run.endToEnd() / rawRun.run().endToEnd(), rawRun.run().endToEnd());
        if (rate == 0) {
          double bare = inAux(fixtures, "bare", BenchFixtures.History.FULL, (schema, prefix) ->
              new BareProducers(servers, shaped, log, jdbcUrl).run(schema, "b" + n + "-"));
          ProducerSide side = new ProducerSide(shape, bare, rawRun.run().producedRate(), run.producedRate());
          sides.add(side);
          log.printf("producer side (%s): handoff %,.0f tx/s = %.0f%% of the same transactions without the"
              + " outbox row (%,.0f tx/s); raw pipeline %.0f%%%n", shape, side.handoff() / shape.perTransaction(),
              100 * side.handoff() / bare, bare / shape.perTransaction(), 100 * side.raw() / bare);
        }
        i++;
      }
    }
  }

  /** {@code shape} with all its sessions in this JVM: how the scale checks and the overload run. */
  private static Shape inProcess(Shape shape) {
    return new Shape(1, shape.totalSessions(), shape.perTransaction());
  }

  private interface AuxRun<R> {
    R run(String schema, String prefix);
  }

  /** A run in the auxiliary schema and key prefix named by {@code suffix}, prepared with {@code history}. */
  private static <R> R inAux(BenchFixtures fixtures, String suffix, BenchFixtures.History history, AuxRun<R> body) {
    String schema = fixtures.aux(suffix);
    String prefix = fixtures.auxPrefix(suffix);
    fixtures.prepareAux(schema, prefix, history);
    R run = body.run(schema, prefix);
    fixtures.cleanUp(schema, prefix);
    return run;
  }
}
