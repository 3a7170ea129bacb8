package dev.handoff.ledger.bench;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.InboxRetention;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentService;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.migrations.SchemaNames;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.RetentionReport;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.TopicConfig;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;

/**
 * The soak: the ledger at a fixed rate for a long time, with retention shortened so that every retention path (the
 * stream trim, the outbox purge, the inbox purge) runs many times inside the run, sampling every place where work
 * is kept. Whatever grows without bound shows as a slope over the second half of the run, when every retention
 * horizon has been reached. Ends with the audit: every payment charged once.
 */
public final class Soak {

  /**
   * The soak's settings.
   *
   * @param rate payments per second, all producers together
   * @param duration how long the producers run
   * @param outboxRetention the relay's outbox retention, short so that the purge runs inside the run
   * @param dedupWindow the consumers' inbox dedup window (at least {@code outboxRetention})
   * @param sampleEvery how often the figures are read
   */
  public record Config(double rate, Duration duration, int producers, int producerBatch, int shards, int workers,
      int batch, Duration outboxRetention, Duration dedupWindow, Duration sampleEvery, String schema,
      String keyPrefix) {

    public Config {
      if (rate <= 0) {
        throw new IllegalArgumentException("--rate: the soak runs at a fixed rate above 0, was " + rate);
      }
      if (duration.compareTo(Duration.ofSeconds(20)) < 0) {
        throw new IllegalArgumentException("--soak: at least 20s, was " + duration);
      }
      if (dedupWindow.compareTo(outboxRetention) < 0) {
        throw new IllegalArgumentException("--soak-dedup-window must be at least --soak-retention ("
            + outboxRetention + "), was " + dedupWindow);
      }
      SchemaNames.requireValid(schema);
      StreamFormat.requireValidKeyPrefix(keyPrefix);
    }

    TopicConfig topic() {
      return TopicConfig.of(dev.handoff.ledger.PaymentEvents.TOPIC).withShards(shards);
    }
  }

  /** One reading of everything that holds work, {@code t} seconds into the run. */
  public record Sample(double t, long paid, long charged, long streamLength, long redisUsedMemory, long outboxRows,
      long pastRetention, long inboxRows, long heapAfterGc, double p99Ms, long latencies) {}

  /**
   * Whether one figure is flat over the second half of the run: the least-squares slope, and the change it makes
   * over the half, against the half's mean.
   */
  public record Trend(String metric, double firstHalfMean, double secondHalfMean, double slopePerMinute,
      double changeOverSecondHalf, boolean flat) {}

  public record Result(Config config, Environment env, List<Sample> samples, List<Trend> trends, double p99FirstHalf,
      double p99SecondHalf, long paid, long charged, LedgerAudit.Result audit, long outboxPurged, long trimmed,
      double drainSeconds) {

    /** p99 over the second half within 1.2x the first half's. */
    public boolean p99Held() {
      return p99SecondHalf <= 1.2 * p99FirstHalf;
    }

    public boolean passed() {
      return trends.stream().allMatch(Trend::flat) && p99Held() && audit.missing() == 0 && audit.duplicated() == 0;
    }
  }

  private final DataSource dataSource;
  private final RedisClient redis;
  private final HostAndPort redisServer;
  private final JedisClientConfig redisConfig;
  private final Config config;
  private final PrintWriter out;

  private Soak(DataSource dataSource, RedisClient redis, HostAndPort redisServer, JedisClientConfig redisConfig,
      Config config, PrintWriter out) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.redisServer = redisServer;
    this.redisConfig = redisConfig;
    this.config = config;
    this.out = out;
  }

  public static Result run(DataSource dataSource, RedisClient redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, Config config, String servers, PrintWriter out) {
    return new Soak(dataSource, redis, redisServer, redisConfig, config, out).run(servers);
  }

  private Result run(String servers) {
    Environment env = Environment.probe(dataSource, redis, servers);
    String schema = config.schema();
    requireFresh(schema);
    HandoffMigrations.migrate(dataSource, schema);
    LedgerMigrations.migrate(dataSource, schema);
    out.printf("soak: %,.0f payments/s for %ds; outbox retention %ds, dedup window %ds; PostgreSQL fsync=%s,"
            + " synchronous_commit=%s%n", config.rate(), config.duration().toSeconds(),
        config.outboxRetention().toSeconds(), config.dedupWindow().toSeconds(),
        env.postgresSettings().getOrDefault("fsync", "?"), env.postgresSettings().getOrDefault("synchronous_commit",
            "?"));
    out.flush();

    Latencies latencies = new Latencies();
    Map<String, Long> committedAt = new ConcurrentHashMap<>();
    AtomicLong paid = new AtomicLong();
    AtomicLong charged = new AtomicLong();
    AtomicLong outboxPurged = new AtomicLong();
    AtomicLong trimmed = new AtomicLong();
    Relay relay = Relay.builder(dataSource, redis).schema(schema).keyPrefix(config.keyPrefix())
        .topic(config.topic()).owner("soak-relay")
        .outboxRetention(config.outboxRetention())
        .maintenanceInterval(Duration.ofSeconds(10))
        .listener(new dev.handoff.outbox.RelayListener() {
          @Override
          public void maintained(RetentionReport report) {
            outboxPurged.addAndGet(report.purged());
          }

          @Override
          public void trimmed(dev.handoff.outbox.ShardId shard, String minId, long evicted) {
            trimmed.addAndGet(evicted);
          }
        })
        .build();
    InboxRetention inbox = InboxRetention.forOutboxRetention(config.outboxRetention())
        .withDedupWindow(config.dedupWindow()).withPurgeInterval(Duration.ofSeconds(10));
    List<LedgerConsumer> consumers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      consumers.add(LedgerConsumer.builder(dataSource, redisServer).redisConfig(redisConfig).schema(schema)
          .keyPrefix(config.keyPrefix()).topic(config.topic()).consumerName("soak-" + i).workers(config.workers())
          .batchSize(config.batch()).block(Duration.ofMillis(500)).persistStats(false).inboxRetention(inbox)
          .listener(new ConsumerListener() {
            @Override
            public void handled(InboundMessage m) {
              Long at = m.key() == null ? null : committedAt.remove(m.key());
              if (at != null) {
                latencies.record(System.nanoTime() - at);
              }
              charged.incrementAndGet();
            }
          }).build());
    }
    relay.start();
    consumers.forEach(LedgerConsumer::start);

    long origin = System.nanoTime();
    long end = origin + config.duration().toNanos();
    PaymentService service = new PaymentService(dataSource, schema, config.topic());
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicLong next = new AtomicLong();
    List<Thread> producers = new ArrayList<>();
    double perProducer = config.rate() / config.producers();
    int pb = config.producerBatch();
    for (int p = 0; p < config.producers(); p++) {
      producers.add(new Thread(() -> {
        try {
          for (long k = 0; ; k++) {
            long due = origin + (long) (k * pb / perProducer * 1e9);
            long wait = due - System.nanoTime();
            if (wait > 0) {
              Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            if (System.nanoTime() >= end) {
              return;
            }
            long base = next.getAndAdd(pb);
            List<Payment> batch = new ArrayList<>(pb);
            for (int i = 0; i < pb; i++) {
              batch.add(new Payment("soak-" + (base + i), "acct-" + ((base + i) % 1000), 100, false));
            }
            service.payAll(batch);
            long now = System.nanoTime();
            batch.forEach(b -> committedAt.put(b.paymentId(), now));
            paid.addAndGet(pb);
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "soak-producer-" + p));
    }
    producers.forEach(Thread::start);

    List<Sample> samples = new ArrayList<>();
    long every = config.sampleEvery().toNanos();
    for (long at = origin + every; at <= end + every / 2; at += every) {
      Bench.pause((at - System.nanoTime()) / 1_000_000);
      Sample s = sample(schema, origin, paid.get(), charged.get(), latencies);
      samples.add(s);
      out.printf("  %5.0fs  paid %,9d  charged %,9d  streams %,7d  redis %,6.1f MB  outbox %,8d (past retention"
              + " %,6d)  inbox %,8d  heap %,5d MB  p99 %,7.1f ms%n", s.t(), s.paid(), s.charged(), s.streamLength(),
          s.redisUsedMemory() / 1e6, s.outboxRows(), s.pastRetention(), s.inboxRows(), s.heapAfterGc() >> 20,
          s.p99Ms());
      out.flush();
      if (failure.get() != null) {
        break;
      }
    }
    Bench.joinAll(producers);
    long stopped = System.nanoTime();
    long deadline = stopped + Duration.ofSeconds(120).toNanos();
    while (failure.get() == null && charged.get() < paid.get() && System.nanoTime() < deadline) {
      Bench.pause(20);
    }
    double drainSeconds = (System.nanoTime() - stopped) / 1e9;
    for (LedgerConsumer c : consumers) {
      c.close(Duration.ofSeconds(10));
    }
    relay.close(Duration.ofSeconds(5));
    if (failure.get() != null) {
      throw new LedgerException("soak producer failed: " + failure.get(), failure.get());
    }
    LedgerAudit.Result audit = LedgerAudit.audit(dataSource, schema, LedgerConsumer.DEFAULT_GROUP);
    double half = config.duration().toNanos() / 2e9;
    List<Trend> trends = List.of(
        trend("stream length (entries)", samples, half, Sample::streamLength, 2_000),
        trend("Redis used_memory (bytes)", samples, half, Sample::redisUsedMemory, 2_000_000),
        trend("outbox rows", samples, half, Sample::outboxRows, 2_000),
        trend("inbox rows", samples, half, Sample::inboxRows, 2_000),
        trend("heap after GC (bytes)", samples, half, Sample::heapAfterGc, 16_000_000));
    return new Result(config, env, samples, trends, latencies.p99Ms(0, half), latencies.p99Ms(half,
        Double.MAX_VALUE), paid.get(), charged.get(), audit, outboxPurged.get(), trimmed.get(), drainSeconds);
  }

  /**
   * The least-squares line through the samples of the second half; flat when the change it makes over that half is
   * within 10% of the half's mean or within {@code floor} (noise at small values).
   */
  static Trend trend(String metric, List<Sample> samples, double halfSeconds,
      java.util.function.ToLongFunction<Sample> value, double floor) {
    double firstSum = 0;
    int firstN = 0;
    double sx = 0;
    double sy = 0;
    double sxx = 0;
    double sxy = 0;
    int n = 0;
    for (Sample s : samples) {
      double y = value.applyAsLong(s);
      if (s.t() < halfSeconds) {
        firstSum += y;
        firstN++;
      } else {
        double x = s.t() / 60;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        n++;
      }
    }
    double slope = n < 2 ? 0 : (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double mean = n == 0 ? 0 : sy / n;
    double change = slope * halfSeconds / 60;
    boolean flat = n >= 2 && Math.abs(change) <= Math.max(0.10 * mean, floor);
    return new Trend(metric, firstN == 0 ? 0 : firstSum / firstN, mean, slope, change, flat);
  }

  private Sample sample(String schema, long origin, long paid, long charged, Latencies latencies) {
    long streams = 0;
    for (int shard = 0; shard < config.shards(); shard++) {
      streams += redis.xlen(StreamFormat.streamKey(config.keyPrefix(), dev.handoff.ledger.PaymentEvents.TOPIC,
          shard));
    }
    long usedMemory = -1;
    for (String line : redis.info("memory").split("\r?\n")) {
      if (line.startsWith("used_memory:")) {
        usedMemory = Long.parseLong(line.substring("used_memory:".length()).strip());
      }
    }
    double t = (System.nanoTime() - origin) / 1e9;
    long[] window = latencies.roll(t);
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      long outbox = one(st, "SELECT count(*) FROM " + schema + ".outbox");
      long past = one(st, "SELECT count(*) FROM " + schema + ".outbox WHERE published_at < now() - make_interval(secs"
          + " => " + config.outboxRetention().toSeconds() + ")");
      long inbox = one(st, "SELECT count(*) FROM " + schema + ".inbox");
      return new Sample(t, paid, charged, streams, usedMemory, outbox, past, inbox, Bench.heapAfterLastGc(),
          Latencies.p99Ms(window), Latencies.count(window));
    } catch (SQLException e) {
      throw new LedgerException("soak: could not sample the database: " + e.getMessage(), e);
    }
  }

  /**
   * Commit-to-charge latencies in log-spaced buckets (10% wide, 0.1 ms to 10 min), one set per sampling window, so
   * that memory stays flat however long the soak runs.
   */
  static final class Latencies {
    private static final int BUCKETS = 170;
    private static final double BASE_MS = 0.1;
    private static final double RATIO = 1.1;
    private final List<double[]> windowTimes = new ArrayList<>();
    private final List<long[]> windows = new ArrayList<>();
    private volatile AtomicLongArray current = new AtomicLongArray(BUCKETS);

    void record(long nanos) {
      double ms = nanos / 1e6;
      int b = ms <= BASE_MS ? 0 : (int) Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BASE_MS) / Math.log(RATIO)));
      current.incrementAndGet(b);
    }

    /** Closes the current window at {@code t} seconds; returns its counts. */
    synchronized long[] roll(double t) {
      AtomicLongArray done = current;
      current = new AtomicLongArray(BUCKETS);
      long[] counts = new long[BUCKETS];
      for (int i = 0; i < BUCKETS; i++) {
        counts[i] = done.get(i);
      }
      windows.add(counts);
      windowTimes.add(new double[] {t});
      return counts;
    }

    /** The p99 of the windows that closed in {@code [from, to)} seconds. */
    synchronized double p99Ms(double from, double to) {
      long[] merged = new long[BUCKETS];
      for (int w = 0; w < windows.size(); w++) {
        double t = windowTimes.get(w)[0];
        if (t >= from && t < to) {
          for (int i = 0; i < BUCKETS; i++) {
            merged[i] += windows.get(w)[i];
          }
        }
      }
      return p99Ms(merged);
    }

    static long count(long[] counts) {
      long n = 0;
      for (long c : counts) {
        n += c;
      }
      return n;
    }

    /** The upper edge of the bucket that holds the 99th percentile. */
    static double p99Ms(long[] counts) {
      long n = count(counts);
      if (n == 0) {
        return 0;
      }
      long rank = (long) Math.ceil(n * 0.99);
      long seen = 0;
      for (int i = 0; i < counts.length; i++) {
        seen += counts[i];
        if (seen >= rank) {
          return BASE_MS * Math.pow(RATIO, i);
        }
      }
      return BASE_MS * Math.pow(RATIO, counts.length - 1);
    }
  }

  private void requireFresh(String schema) {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM information_schema.tables WHERE table_schema = '"
            + schema + "' AND table_name = 'payment'")) {
      rs.next();
      if (rs.getLong(1) > 0 && one(st, "SELECT count(*) FROM " + schema + ".payment") > 0) {
        throw new LedgerException("--schema '" + schema + "' already holds payments; the soak needs a schema of its"
            + " own (drop it, or pass another --schema)");
      }
    } catch (SQLException e) {
      throw new LedgerException("soak: could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
    for (int shard = 0; shard < config.shards(); shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), dev.handoff.ledger.PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        throw new LedgerException("--key-prefix '" + config.keyPrefix() + "': stream " + key + " exists already;"
            + " the soak needs a key prefix of its own");
      }
    }
  }

  private static long one(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
