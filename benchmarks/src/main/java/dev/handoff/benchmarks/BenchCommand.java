package dev.handoff.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.benchmarks.ledger.Bench;
import dev.handoff.benchmarks.ledger.BenchPool;
import dev.handoff.benchmarks.ledger.BenchReport;
import dev.handoff.benchmarks.ledger.CpuPinning;
import dev.handoff.benchmarks.ledger.Shape;
import dev.handoff.benchmarks.ledger.Soak;
import dev.handoff.benchmarks.ledger.SoakReport;
import dev.handoff.cli.Connections;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.ledger.LedgerException;
import dev.handoff.testing.tools.EmbeddedServers;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.RedisClient;

/** {@code bench}: the end-to-end benchmark with its baselines and a report; see {@link Bench}. */
@Command(name = "bench", description = "End-to-end benchmark: payments -> outbox -> relay -> Redis Streams ->"
    + " ledger consumer, beside raw baselines of the same SQL, a raw pipelined XADD and, after each end-to-end run,"
    + " a raw pipeline of the whole job at the same rate; writes report.md and SVG"
    + " charts. Starts embedded PostgreSQL (durable unless --unsafe-fast-db) and Redis unless URLs are given.")
final class BenchCommand implements Callable<Integer> {

  /** How the reports name the command that wrote them, before its arguments. */
  private static final String COMMAND = "handoff-benchmarks ";

  @Option(names = "--rate", split = ",", defaultValue = "0",
      description = "producer rate(s) in payments/s, comma-separated, one end-to-end run each; 0 = flat out"
          + " (${DEFAULT-VALUE})")
  List<Double> rates;

  @Option(names = "--duration", defaultValue = "30s", description = "length of each end-to-end run: 30s, 2m, PT30S"
      + " (${DEFAULT-VALUE})")
  String duration;

  @Option(names = "--shapes", split = ",", defaultValue = "32x1,64x1,4x10",
      description = "producer shapes, comma-separated, <sessions>x<payments per transaction>; every rate runs at"
          + " each (${DEFAULT-VALUE}: a web service's sessions, one payment each, and a batch job's); a soak runs at"
          + " the first (2x1 unless given)")
  List<String> shapes;

  @Option(names = "--wake-ups", defaultValue = "0", description = "also time this many single payments, each after"
      + " 5 s idle, from commit to stream: how soon a sleeping relay wakes (${DEFAULT-VALUE})")
  int wakeUps;

  @Option(names = "--shards", defaultValue = "4", description = "shards of the payments topic (${DEFAULT-VALUE})")
  int shards;

  @Option(names = "--workers", defaultValue = "2", description = "consumer worker threads (${DEFAULT-VALUE})")
  int workers;

  @Option(names = "--batch", defaultValue = "100", description = "consumer batch size (${DEFAULT-VALUE})")
  int batch;

  @Option(names = "--payments", defaultValue = "50000",
      description = "backlog for the component measurements and their baselines (${DEFAULT-VALUE})")
  int payments;

  @Option(names = "--retained", defaultValue = "0",
      description = "also run flat out with an empty outbox and with this many published rows retained, e.g."
          + " 1000000 (default: skip)")
  long retained;

  @Option(names = "--overload", description = "also run producers ten times faster than rate-limited consumers")
  boolean overload;

  @Option(names = "--pin-producers", description = "run the producer processes and their PostgreSQL backends on one"
      + " half of the CPUs and everything else on the other (taskset; shapes of several processes, servers on this"
      + " machine): the producer side then measures what the append costs, not the CPU the relay and consumers"
      + " share")
  boolean pinProducers;

  @Option(names = "--server-checkpoints", description = "leave checkpoints to the server's schedule, as an"
      + " application meets them: a run may start in the middle of one, and at 2,000 payments/s on the default"
      + " max_wal_size one is in progress most of the time (default: a CHECKPOINT before each run, so that every run,"
      + " handoff's and raw's alike, starts right after one)")
  boolean serverCheckpoints;

  @Option(names = "--unsafe-fast-db", description = "run the embedded PostgreSQL with fsync, synchronous_commit and"
      + " full_page_writes off, as no production database runs (default: on, the production defaults; the report"
      + " states which)")
  boolean unsafeFastDb;

  @Option(names = "--overload-rate", defaultValue = "2000",
      description = "producer rate of the overload run; consumers get a tenth (${DEFAULT-VALUE})")
  double overloadRate;

  @Option(names = "--outbox-retention", defaultValue = "7d",
      description = "the end-to-end relays' outbox retention: 7d, 2m, 1ms (${DEFAULT-VALUE}); a short one keeps the"
          + " purge deleting at the append rate")
  String outboxRetention;

  @Option(names = "--maintenance-interval", defaultValue = "30s",
      description = "the end-to-end relays' maintenance interval (${DEFAULT-VALUE})")
  String maintenanceInterval;

  @Option(names = "--soak", description = "instead: a soak at the fixed --rate for this long (10m, PT10M), with"
      + " retention shortened so that every retention path runs inside it; samples every place work is kept and"
      + " ends with whether each is flat over the second half")
  String soak;

  @Option(names = "--soak-retention", defaultValue = "2m",
      description = "with --soak: the relay's outbox retention (${DEFAULT-VALUE})")
  String soakRetention;

  @Option(names = "--soak-dedup-window", defaultValue = "3m",
      description = "with --soak: the consumers' inbox dedup window, at least --soak-retention (${DEFAULT-VALUE})")
  String soakDedupWindow;

  @Option(names = "--sample-every", defaultValue = "10s", description = "with --soak: how often it samples"
      + " (${DEFAULT-VALUE})")
  String sampleEvery;

  @Option(names = "--warm-up-rounds", defaultValue = "5", description = "at most this many rounds of one unreported"
      + " run of each pipeline before the first measured one, until the JIT is quiet (at least 2, unless this is 1)"
      + " (${DEFAULT-VALUE})")
  int warmUpRounds;

  @Option(names = "--quick", description = "a few seconds in all (for tests): --duration 3s --payments 2000"
      + " --shapes 2x1 --rate 500,0 --overload --overload-rate 500 --warm-up-rounds 1, unless given")
  boolean quick;

  @Option(names = "--report", defaultValue = "bench-report", description = "folder of report.md and the charts"
      + " (${DEFAULT-VALUE})")
  Path report;

  @Option(names = "--jdbc-url", description = "use this PostgreSQL instead of an embedded one")
  String jdbcUrl;

  @Option(names = "--redis-url", description = "use this Redis instead of an embedded one")
  String redisUrl;

  @Option(names = "--schema", defaultValue = "bench",
      description = "schema, which must hold no payments yet; <schema>_parts, _raw, _empty, _retained, _overload are"
          + " the benchmark's own and dropped (${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--key-prefix", defaultValue = "bench", description = "Redis key prefix, whose streams must not"
      + " exist yet; <prefix>-parts etc. are the benchmark's own (${DEFAULT-VALUE})")
  String keyPrefix;

  @Option(names = "--keep", description = "keep the auxiliary schemas and keys")
  boolean keep;

  @Option(names = "--verbose", description = "show handoff's own log lines (warnings and errors are shown anyway)")
  boolean verbose;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    var parsed = spec.commandLine().getParseResult();
    if (quick) {
      if (!parsed.hasMatchedOption("--duration")) {
        duration = "3s";
      }
      if (!parsed.hasMatchedOption("--payments")) {
        payments = 2000;
      }
      if (!parsed.hasMatchedOption("--rate")) {
        rates = List.of(500.0, 0.0);
      }
      if (!parsed.hasMatchedOption("--overload-rate")) {
        overloadRate = 500;
      }
      if (!parsed.hasMatchedOption("--shapes")) {
        shapes = List.of("2x1");
      }
      if (!parsed.hasMatchedOption("--warm-up-rounds")) {
        warmUpRounds = 1;
      }
      overload = true;
    }
    if (soak != null && !parsed.hasMatchedOption("--shapes")) {
      shapes = List.of("2x1"); // a soak holds a fixed rate for long: two producers are plenty
    }
    Bench.Config config = null;
    Soak.Config soakConfig = null;
    int sessions = 0;
    try {
      List<Shape> parsedShapes = shapes.stream().map(Shape::parse).toList();
      // The pool serves the producers that run in this JVM: every shape of one process, and the first shape's
      // sessions together (the components and the overload run them here); producer processes have their own.
      sessions = Math.max(parsedShapes.get(0).processes() * parsedShapes.get(0).sessions(), parsedShapes.stream()
          .filter(sh -> sh.processes() == 1).mapToInt(Shape::sessions).max().orElse(1));
      if (soak != null) {
        Shape first = parsedShapes.get(0);
        soakConfig = new Soak.Config(rates.get(0), parseDuration(soak, "--soak"), first.sessions(),
            first.perTransaction(), shards,
            workers, batch, parseDuration(soakRetention, "--soak-retention"),
            parseDuration(soakDedupWindow, "--soak-dedup-window"), parseDuration(sampleEvery, "--sample-every"),
            schema, keyPrefix);
      } else {
        if (pinProducers && parsedShapes.stream().anyMatch(sh -> sh.processes() == 1)) {
          throw new IllegalArgumentException("--pin-producers pins producer processes: give only shapes of several"
              + " processes, such as 4x8x1 (32 sessions in 4 processes)");
        }
        config = new Bench.Config(rates, parseDuration(duration, "--duration"), parsedShapes, shards,
            workers, batch, payments, retained, overload, overloadRate, schema, keyPrefix, keep,
            parseDuration(outboxRetention, "--outbox-retention"),
            parseDuration(maintenanceInterval, "--maintenance-interval"), wakeUps,
            pinProducers ? CpuPinning.halves() : null, warmUpRounds, serverCheckpoints);
      }
    } catch (IllegalArgumentException e) {
      throw new LedgerException(e.getMessage());
    }
    BenchmarksCli.handoffLogLevel(verbose ? "INFO" : "WARN");
    PrintWriter out = spec.commandLine().getOut();
    boolean embeddedPostgres = jdbcUrl == null || jdbcUrl.isBlank();
    boolean embeddedRedis = redisUrl == null || redisUrl.isBlank();
    long t0 = System.nanoTime();
    try (EmbeddedServers servers = EmbeddedServers.start(embeddedPostgres, embeddedRedis, !unsafeFastDb)) {
      String jdbc = embeddedPostgres ? servers.jdbcUrl() : jdbcUrl;
      String redisAt = embeddedRedis ? servers.redisUrl() : redisUrl;
      String described = embeddedPostgres && embeddedRedis ? servers.describe()
          : embeddedPostgres ? servers.describe() + " and Redis " + Connections.mask(redisAt)
          : embeddedRedis ? "PostgreSQL " + Connections.mask(jdbc) + " and " + servers.describe()
          : "PostgreSQL " + Connections.mask(jdbc) + " and Redis " + Connections.mask(redisAt);
      if (embeddedPostgres || embeddedRedis) {
        out.printf("started %s in %.1fs%n", servers.describe(), (System.nanoTime() - t0) / 1e9);
      }
      // An application's pool, full before the first run (BenchPool): the producers, relay and consumers share it.
      try (HikariDataSource db = BenchPool.open(jdbc, sessions + workers + 8, "ledger-bench");
          RedisClient redis = Connections.redis(redisAt, 16)) {
        // handoff's own connections (relay, consumers): the URL's server and login, 5 s timeouts.
        RedisConnectionSpec handoffRedis = redisSpec(redisAt);
        if (soakConfig != null) {
          Soak.Result soaked = Soak.run(db, redis, handoffRedis, soakConfig, described, out);
          List<Path> files = SoakReport.write(soaked, report, COMMAND + String.join(" ", maskedArgs()));
          out.printf("%nreport: %s (%d files)%n%s%n", files.get(0).toAbsolutePath(), files.size(),
              SoakReport.verdict(soaked));
          out.flush();
          return soaked.passed() ? 0 : 1;
        }
        Bench.Result result =
            Bench.run(db, jdbc, redis, handoffRedis, config, described, out);
        List<Path> files = BenchReport.write(result, report, COMMAND + String.join(" ", maskedArgs()));
        out.println();
        out.println("== targets ==");
        for (BenchReport.Verdict v : BenchReport.verdicts(result)) {
          out.printf("%-70s %-45s %s%n", v.target(), v.figure(), v.met());
        }
        out.printf("%nreport: %s (%d files)%n", files.get(0).toAbsolutePath(), files.size());
        out.flush();
        return 0;
      }
    }
  }

  /** The spec of {@code url} with 5 s timeouts, its error as one line with the password masked. */
  private static RedisConnectionSpec redisSpec(String url) {
    try {
      return RedisConnectionSpec.builder(url).connectTimeout(Duration.ofSeconds(5))
          .socketTimeout(Duration.ofSeconds(5)).build();
    } catch (IllegalArgumentException e) {
      throw new LedgerException(e.getMessage());
    }
  }

  private List<String> maskedArgs() {
    return spec.commandLine().getParseResult().originalArgs().stream().map(Connections::mask).toList();
  }

  /** {@code 30s}, {@code 2m}, {@code 500ms}, {@code 30} (seconds) or ISO-8601 ({@code PT30S}). */
  static Duration parseDuration(String s, String option) {
    String v = s.strip().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("pt")) {
        return Duration.parse(v);
      }
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      }
      if (v.endsWith("s")) {
        return Duration.ofMillis((long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 1000));
      }
      if (v.endsWith("d")) {
        return Duration.ofMillis((long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 86_400_000));
      }
      if (v.endsWith("m")) {
        return Duration.ofMillis((long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 60_000));
      }
      return Duration.ofMillis((long) (Double.parseDouble(v) * 1000));
    } catch (RuntimeException e) {
      throw new LedgerException(option + ": expected 30s, 2m, 500ms or PT30S, was '" + s + "'");
    }
  }
}
