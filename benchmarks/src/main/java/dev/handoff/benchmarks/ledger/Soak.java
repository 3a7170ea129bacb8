package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.InboxRetention;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.RetentionReport;
import dev.handoff.testing.tools.LedgerServers;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
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
      return TopicConfig.of(PaymentEvents.TOPIC).withShards(shards);
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

  private Soak() {}

  public static Result run(DataSource dataSource, RedisClient redis, RedisConnectionSpec redisSpec, Config config,
      String described, PrintWriter out) {
    LedgerServers servers = new LedgerServers(dataSource, redis, redisSpec);
    Environment env = Environment.probe(dataSource, redis, described,
        "a soak runs for as long as it is told, as an application does");
    String schema = config.schema();
    SoakSampler sampler = new SoakSampler(dataSource, redis, config);
    sampler.requireFresh();
    HandoffMigrations.migrate(dataSource, schema);
    LedgerMigrations.migrate(dataSource, schema);
    PacedProducers producers = new PacedProducers("soak-producer-", config.producers(), config.producerBatch(),
        config.rate(), 0);
    out.printf("soak: %,.0f payments/s for %ds (Poisson arrivals: %,d payments scheduled); outbox retention %ds,"
            + " dedup window %ds; PostgreSQL fsync=%s, synchronous_commit=%s%n", config.rate(),
        config.duration().toSeconds(), producers.scheduled(config.duration().toNanos()),
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
    Relay relay = Relay.builder(dataSource, redisSpec).schema(schema).keyPrefix(config.keyPrefix())
        .topic(config.topic()).owner("soak-relay")
        .outboxRetention(config.outboxRetention())
        .maintenanceInterval(Duration.ofSeconds(10))
        .listener(new RelayListener() {
          @Override
          public void maintained(RetentionReport report) {
            outboxPurged.addAndGet(report.purged());
          }

          @Override
          public void trimmed(ShardId shard, String minId, long evicted) {
            trimmed.addAndGet(evicted);
          }
        })
        .build();
    InboxRetention inbox = InboxRetention.forOutboxRetention(config.outboxRetention())
        .withDedupWindow(config.dedupWindow()).withPurgeInterval(Duration.ofSeconds(10));
    List<LedgerConsumer> consumers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      consumers.add(LedgerConsumer.of(StreamConsumer.builder(servers.dataSource(), servers.redisSpec())
          .schema(schema).keyPrefix(config.keyPrefix()).topic(config.topic()).group(LedgerConsumer.DEFAULT_GROUP)
          .consumerName("soak-" + i).workers(config.workers()).batchSize(config.batch()).block(Duration.ofMillis(500))
          .inboxRetention(inbox), servers.dataSource(), false, new ConsumerListener() {
            @Override
            public void handled(InboundMessage m) {
              Long at = m.key() == null ? null : committedAt.remove(m.key());
              if (at != null) {
                latencies.record(System.nanoTime() - at);
              }
              charged.incrementAndGet();
            }
          }));
    }
    relay.start();
    consumers.forEach(LedgerConsumer::start);

    long origin = System.nanoTime();
    long end = origin + config.duration().toNanos();
    producers.start(origin, end, new PaymentService(dataSource, schema, config.topic())::payAll, Soak::payments,
        (base, count, now) -> {
          payments(base, count).forEach(b -> committedAt.put(b.paymentId(), now));
          paid.addAndGet(count);
        });

    List<Sample> samples = new ArrayList<>();
    long every = config.sampleEvery().toNanos();
    for (long at = origin + every; at <= end + every / 2; at += every) {
      BenchThreads.pause((at - System.nanoTime()) / 1_000_000);
      Sample s = sampler.sample(origin, paid.get(), charged.get(), latencies);
      samples.add(s);
      out.printf("  %5.0fs  paid %,9d  charged %,9d  streams %,7d  redis %,6.1f MB  outbox %,8d (past retention"
              + " %,6d)  inbox %,8d  heap %,5d MB  p99 %,7.1f ms%n", s.t(), s.paid(), s.charged(), s.streamLength(),
          s.redisUsedMemory() / 1e6, s.outboxRows(), s.pastRetention(), s.inboxRows(), s.heapAfterGc() >> 20,
          s.p99Ms());
      out.flush();
      if (producers.failure() != null) {
        break;
      }
    }
    producers.join();
    long stopped = System.nanoTime();
    long deadline = stopped + Duration.ofSeconds(120).toNanos();
    while (producers.failure() == null && charged.get() < paid.get() && System.nanoTime() < deadline) {
      BenchThreads.pause(20);
    }
    double drainSeconds = (System.nanoTime() - stopped) / 1e9;
    for (LedgerConsumer c : consumers) {
      c.close(Duration.ofSeconds(10));
    }
    relay.close(Duration.ofSeconds(5));
    if (producers.failure() != null) {
      throw new LedgerException("soak producer failed: " + producers.failure(), producers.failure());
    }
    LedgerAudit.Result audit = LedgerAudit.audit(dataSource, schema, LedgerConsumer.DEFAULT_GROUP);
    double half = config.duration().toNanos() / 2e9;
    List<Trend> trends = List.of(
        Trends.fit("stream length (entries)", samples, half, Sample::streamLength, 2_000),
        Trends.fit("Redis used_memory (bytes)", samples, half, Sample::redisUsedMemory, 2_000_000),
        Trends.fit("outbox rows", samples, half, Sample::outboxRows, 2_000),
        Trends.fit("inbox rows", samples, half, Sample::inboxRows, 2_000),
        Trends.fit("heap after GC (bytes)", samples, half, Sample::heapAfterGc, 16_000_000));
    return new Result(config, env, samples, trends, latencies.p99Ms(0, half), latencies.p99Ms(half,
        Double.MAX_VALUE), paid.get(), charged.get(), audit, outboxPurged.get(), trimmed.get(), drainSeconds);
  }

  /** The soak's payments: 1.00 each, over 1,000 accounts. */
  private static List<Payment> payments(long base, int count) {
    List<Payment> batch = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      batch.add(new Payment("soak-" + (base + i), "acct-" + ((base + i) % 1000), 100, false));
    }
    return batch;
  }
}
