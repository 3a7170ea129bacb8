package dev.handoff.ledger.bench;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.ConsumerStatus;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.StreamMessage;
import dev.handoff.outbox.TopicConfig;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The end-to-end benchmark: payments through {@link PaymentService} (payment row and outbox message in one
 * transaction), a {@link Relay} and a {@link LedgerConsumer} (inbox marker and charge in one transaction), measured
 * beside raw baselines of the same SQL shapes and a raw pipelined XADD, in the same run.
 *
 * <p>Phases: (1) components on a fixed backlog of {@code payments}: raw producer inserts, the payment service, a
 * hand-written at-least-once relay loop, a raw pipelined XADD, the relay, the ledger consumer and a raw batched insert
 * of the consumer's marker and charge; (2) end to end at each producer rate for {@code duration}, then the drain;
 * (3) optionally the scale checks: flat out with an empty outbox versus one with {@code retained} published rows, and
 * producers outrunning rate-limited consumers tenfold.
 *
 * <p>Latency is commit to charge: {@link System#nanoTime()} right after the payment's commit returned, to
 * {@code nanoTime} when the consumer reports the charge's commit ({@link ConsumerListener#handled}); both in this JVM,
 * so one clock.
 */
public final class Bench {

  /** Settled payments each schema of the benchmark starts with; see {@link #seedHistory}. */
  static final int HISTORY = 20_000;

  /**
   * What the benchmark runs with. {@code rate 0} is flat out. {@code outboxRetention} and {@code maintenanceInterval}
   * are the end-to-end relays' (a short retention keeps the outbox purge deleting at the append rate, to measure
   * what it costs).
   */
  public record Config(List<Double> rates, Duration duration, int producers, int producerBatch, int shards,
      int workers, int batch, int payments, long retained, boolean overload, double overloadRate, String schema,
      String keyPrefix, boolean keep, Duration outboxRetention, Duration maintenanceInterval) {

    public Config {
      rates = List.copyOf(rates);
      if (rates.isEmpty() || rates.stream().anyMatch(r -> r < 0)) {
        throw new IllegalArgumentException("--rate: one or more rates >= 0 (0 = flat out)");
      }
      if (duration.toMillis() < 1000) {
        throw new IllegalArgumentException("--duration must be at least 1s, was " + duration);
      }
      if (producers < 1 || producerBatch < 1 || shards < 1 || workers < 1 || batch < 1 || payments < 100) {
        throw new IllegalArgumentException("--producers, --producer-batch, --shards, --workers, --batch must be"
            + " >= 1 and --payments >= 100");
      }
    }

    TopicConfig topic() {
      return TopicConfig.of(PaymentEvents.TOPIC).withShards(shards);
    }

    /** Seconds before latencies and throughput count. */
    double warmupSeconds() {
      return Math.min(5, duration.toMillis() / 5000.0);
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
      double[] secT, double[] secP50, double[] secP99, double[] secMax, double[] secCharged, long[] histogram) {

    /** Whether a fixed rate was held: produced within 2%, no lasting backlog growth, drained within 2 s. */
    public boolean sustained() {
      return rate > 0 && producedRate >= 0.98 * rate && backlogGrowth <= 100 && drained && drainSeconds <= 2;
    }
  }

  /** Everything measured. */
  public record Result(Environment env, Config config, Parts parts, List<Run> runs, Run empty, Run retained,
      double retainedInsertSeconds, Run overload) {}

  /** Histogram bucket upper bounds in milliseconds (the last bucket is open). */
  static final double[] BUCKETS_MS = {1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2000,
      5000, 10_000, Double.MAX_VALUE};

  private final DataSource dataSource;
  private final UnifiedJedis redis;
  private final HostAndPort redisServer;
  private final JedisClientConfig redisConfig;
  private final Config config;
  private final PrintWriter out;
  private final long started = System.nanoTime();

  private Bench(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer, JedisClientConfig redisConfig,
      Config config, PrintWriter out) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.redisServer = redisServer;
    this.redisConfig = redisConfig;
    this.config = config;
    this.out = out;
  }

  /**
   * Runs the benchmark. The main schema and key prefix must hold no payments and no streams yet; the auxiliary ones
   * ({@code <schema>_parts}, {@code _empty}, {@code _retained}, {@code _overload} and the same suffixes on the key
   * prefix) belong to the benchmark: they are dropped before use and, unless {@code keep}, after.
   */
  public static Result run(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, Config config, String servers, PrintWriter out) {
    return new Bench(dataSource, redis, redisServer, redisConfig, config, out).run(servers);
  }

  private Result run(String servers) {
    Environment env = Environment.probe(dataSource, redis, servers);
    event("%s", env.oneLine());
    requireFresh(config.schema(), config.keyPrefix());
    LedgerMigrations.migrate(dataSource, config.schema());
    seedHistory(config.schema(), false);

    Parts parts = parts();

    List<Run> runs = new ArrayList<>();
    int i = 1;
    for (double rate : config.rates()) {
      String name = rate == 0 ? "flat out" : String.format("%,.0f/s", rate);
      runs.add(endToEnd("run " + i + " (" + name + ")", config.schema(), config.keyPrefix(), "r" + i + "-",
          rate, 0, config.duration(), true));
      i++;
    }

    Run empty = null;
    Run retained = null;
    double insertSeconds = 0;
    if (config.retained() > 0) {
      String s1 = aux("empty");
      prepareAux(s1, auxPrefix("empty"), History.WITHOUT_OUTBOX_ROWS);
      empty = endToEnd("flat out, empty outbox", s1, auxPrefix("empty"), "e-", 0, 0, config.duration(), true);
      cleanUp(s1, auxPrefix("empty"));
      String s2 = aux("retained");
      prepareAux(s2, auxPrefix("retained"), History.WITHOUT_OUTBOX_ROWS);
      long t = System.nanoTime();
      retain(s2, config.retained());
      insertSeconds = (System.nanoTime() - t) / 1e9;
      event("inserted %,d published rows into %s.outbox in %.1fs (INSERT ... SELECT generate_series, VACUUM"
          + " ANALYZE)", config.retained(), s2, insertSeconds);
      retained = endToEnd(String.format("flat out, %,d rows retained", config.retained()), s2,
          auxPrefix("retained"), "k-", 0, 0, config.duration(), true);
      cleanUp(s2, auxPrefix("retained"));
    }

    Run overload = null;
    if (config.overload()) {
      String s = aux("overload");
      prepareAux(s, auxPrefix("overload"), History.FULL);
      double rate = config.overloadRate();
      overload = endToEnd(String.format("overload: producers %,.0f/s, consumers limited to %,.0f/s", rate,
          rate / 10), s, auxPrefix("overload"), "o-", rate, rate / 10, config.duration(), false);
      cleanUp(s, auxPrefix("overload"));
    }
    return new Result(env, config, parts, runs, empty, retained, insertSeconds, overload);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Phase 1: components and their baselines on a fixed backlog

  private Parts parts() {
    String schema = aux("parts");
    String prefix = auxPrefix("parts");
    int n = config.payments();
    // The components are timed on tables holding only their backlog, as their baselines are.
    prepareAux(schema, prefix, History.NONE);
    event("components: %,d payments, %d producer thread(s) x %d payment(s)/tx, %d worker(s) x batch %d, %d shards",
        n, config.producers(), config.producerBatch(), config.workers(), config.batch(), config.shards());

    double rawProducer = produceFixed(n, (tx, batch) -> rawProducerTx(tx, schema, batch), "raw-");
    exec("TRUNCATE " + schema + ".payment, " + schema + ".outbox");
    event("  raw producer inserts (payment + outbox row, JDBC)   %,10.0f payments/s", rawProducer);

    PaymentService service = new PaymentService(dataSource, schema, config.topic());
    double producer = produceFixed(n, (tx, batch) -> {
      throw new AssertionError();
    }, "p-", service);
    event("  payment service (payment + Outbox.appendAll)          %,10.0f payments/s  (%.0f%% of raw)", producer,
        100 * producer / rawProducer);
    exec("VACUUM ANALYZE " + schema + ".outbox");

    double loop = timed(n, () -> handWrittenLoop(schema, prefix + "-loop"));
    deleteKeys(prefix + "-loop:*");
    exec("UPDATE " + schema + ".outbox SET published_at = NULL, stream_ms = NULL, stream_seq = NULL");
    exec("VACUUM ANALYZE " + schema + ".outbox");
    event("  hand-written at-least-once relay loop                 %,10.0f rows/s", loop);

    double rawXadd = timed(n, () -> rawXadd(schema, prefix + "-xadd", n));
    deleteKeys(prefix + "-xadd:*");
    event("  raw pipelined XADD (1,000 per pipeline)                %,10.0f entries/s", rawXadd);

    // The component measurement keeps the default retention: its stream has no group yet when it is published.
    Relay relay = Relay.builder(dataSource, redis).schema(schema).keyPrefix(prefix).topic(config.topic())
        .owner("bench-parts").build();
    double relayRate = timed(n, () -> {
      while (queryLong("SELECT count(*) FROM " + schema + ".outbox WHERE published_at IS NULL") > 0) {
        relay.relayOnce();
      }
    });
    relay.close(Duration.ofSeconds(5));
    event("  relay (relayOnce on a backlog)                         %,10.0f rows/s  (%.0f%% of the loop, %.0f%% of"
        + " raw XADD)", relayRate, 100 * relayRate / loop, 100 * relayRate / rawXadd);

    AtomicLong handled = new AtomicLong();
    AtomicLong firstHandledAt = new AtomicLong();
    LedgerConsumer consumer = ledgerConsumer(schema, prefix, "bench-parts", new ConsumerListener() {
      @Override
      public void handled(InboundMessage m) {
        firstHandledAt.compareAndSet(0, System.nanoTime());
        handled.incrementAndGet();
      }
    });
    // Timed from the first charge to the last, like the raw baseline, which has no start-up either: starting
    // the consumer (groups, pools, threads) is not throughput.
    consumer.start();
    long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
    while (handled.get() < n) {
      if (System.nanoTime() > deadline) {
        throw new LedgerException("the consumer charged " + handled.get() + " of " + n + " in 5 minutes");
      }
      pause(1);
    }
    double consumerRate = n / ((System.nanoTime() - firstHandledAt.get()) / 1e9);
    consumer.close(Duration.ofSeconds(10));
    double rawConsumer = rawConsumer(schema, n);
    event("  raw batched insert (inbox marker + charge, JDBC)       %,10.0f messages/s", rawConsumer);
    event("  ledger consumer (StreamConsumer + Ledger.charge)       %,10.0f messages/s  (%.0f%% of raw)",
        consumerRate, 100 * consumerRate / rawConsumer);
    cleanUp(schema, prefix);
    return new Parts(n, rawProducer, producer, rawXadd, loop, relayRate, rawConsumer, consumerRate);
  }

  private interface TxBody {
    void run(Connection tx, List<Payment> batch) throws SQLException;
  }

  private interface Body {
    void run() throws Exception;
  }

  private double timed(long n, Body body) {
    long t0 = System.nanoTime();
    try {
      body.run();
    } catch (Exception e) {
      throw new LedgerException("benchmark phase failed: " + e, e);
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  private double produceFixed(int n, TxBody raw, String idPrefix) {
    return produceFixed(n, raw, idPrefix, null);
  }

  /** {@code n} payments from {@code producers} threads, {@code producerBatch} per transaction; payments/s. */
  private double produceFixed(int n, TxBody raw, String idPrefix, PaymentService service) {
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int p = 0; p < config.producers(); p++) {
      Thread t = new Thread(() -> {
        try (Connection tx = service == null ? dataSource.getConnection() : null) {
          if (tx != null) {
            tx.setAutoCommit(false);
          }
          while (true) {
            long base = next.getAndAdd(config.producerBatch());
            if (base >= n) {
              return;
            }
            List<Payment> batch = payments(idPrefix, base, (int) Math.min(config.producerBatch(), n - base));
            if (service != null) {
              service.payAll(batch);
            } else {
              raw.run(tx, batch);
              tx.commit();
            }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "bench-producer-" + p);
      threads.add(t);
      t.start();
    }
    joinAll(threads);
    if (failure.get() != null) {
      throw new LedgerException("producer failed: " + failure.get(), failure.get());
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  private static List<Payment> payments(String idPrefix, long base, int count) {
    List<Payment> batch = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      long seq = base + i;
      batch.add(new Payment(idPrefix + seq, "acct-" + (seq % 1000 + 1), 100 + (seq * 7919L) % 99_900, false));
    }
    return batch;
  }

  /** The producer's transaction without handoff: the payment insert and a plain insert of the outbox row. */
  private void rawProducerTx(Connection tx, String schema, List<Payment> batch) throws SQLException {
    String payment = "INSERT INTO " + schema + ".payment (payment_id, account, amount_cents, poison)"
        + " SELECT * FROM unnest(?::varchar[], ?::varchar[], ?::bigint[], ?::boolean[])"
        + " ON CONFLICT (payment_id) DO NOTHING RETURNING payment_id";
    String outbox = "INSERT INTO " + schema + ".outbox (message_id, topic, shard, message_key, type, payload, headers)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?::jsonb)";
    int n = batch.size();
    String[] ids = new String[n];
    String[] accounts = new String[n];
    Long[] amounts = new Long[n];
    Boolean[] poison = new Boolean[n];
    for (int i = 0; i < n; i++) {
      ids[i] = batch.get(i).paymentId();
      accounts[i] = batch.get(i).account();
      amounts[i] = batch.get(i).amountCents();
      poison[i] = false;
    }
    try (PreparedStatement ps = tx.prepareStatement(payment)) {
      ps.setArray(1, tx.createArrayOf("varchar", ids));
      ps.setArray(2, tx.createArrayOf("varchar", accounts));
      ps.setArray(3, tx.createArrayOf("bigint", amounts));
      ps.setArray(4, tx.createArrayOf("boolean", poison));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rs.getString(1);
        }
      }
    }
    try (PreparedStatement ps = tx.prepareStatement(outbox)) {
      for (Payment p : batch) {
        ps.setObject(1, UUID.randomUUID());
        ps.setString(2, PaymentEvents.TOPIC);
        ps.setInt(3, Math.floorMod(p.paymentId().hashCode(), config.shards()));
        ps.setString(4, p.paymentId());
        ps.setString(5, PaymentEvents.CREATED);
        ps.setBytes(6, payload(p));
        ps.setString(7, "{\"content-type\":\"application/json\"}");
        if (n == 1) {
          ps.executeUpdate();
        } else {
          ps.addBatch();
        }
      }
      if (n > 1) {
        ps.executeBatch();
      }
    }
  }

  private static byte[] payload(Payment p) {
    return ("{\"payment_id\":\"" + p.paymentId() + "\",\"account\":\"" + p.account() + "\",\"amount_cents\":"
        + p.amountCents() + "}").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * What a minimal at-least-once relay does (no leases, no fencing, auto IDs): per shard, select the next 1,000
   * unpublished rows, XADD them in one pipeline, mark them published with the IDs Redis returned.
   */
  private void handWrittenLoop(String schema, String prefix) throws SQLException {
    String select = "SELECT id, message_id, message_key, type, payload, created_at FROM " + schema
        + ".outbox WHERE topic = ? AND shard = ? AND published_at IS NULL ORDER BY id LIMIT 1000";
    String mark = "UPDATE " + schema + ".outbox o SET published_at = now(), stream_ms = u.ms, stream_seq = u.seq"
        + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, ms, seq) WHERE o.id = u.id";
    try (Connection c = dataSource.getConnection()) {
      for (int shard = 0; shard < config.shards(); shard++) {
        byte[] key = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard).getBytes(StandardCharsets.UTF_8);
        while (true) {
          List<StreamMessage> messages = new ArrayList<>(1000);
          try (PreparedStatement ps = c.prepareStatement(select)) {
            ps.setString(1, PaymentEvents.TOPIC);
            ps.setInt(2, shard);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                messages.add(new StreamMessage(rs.getObject(2, UUID.class), rs.getLong(1), PaymentEvents.TOPIC,
                    rs.getString(4), rs.getString(3), Map.of(), rs.getTimestamp(6).toInstant(), rs.getBytes(5)));
              }
            }
          }
          if (messages.isEmpty()) {
            break;
          }
          List<Response<byte[]>> replies = new ArrayList<>(messages.size());
          try (Pipeline p = pipelined()) {
            for (StreamMessage m : messages) {
              replies.add(p.xadd(key, XAddParams.xAddParams(), StreamFormat.encode(m)));
            }
            p.sync();
          }
          Long[] ids = new Long[messages.size()];
          Long[] ms = new Long[ids.length];
          Long[] seq = new Long[ids.length];
          for (int i = 0; i < ids.length; i++) {
            String id = new String(replies.get(i).get(), StandardCharsets.UTF_8);
            int dash = id.indexOf('-');
            ids[i] = messages.get(i).outboxId();
            ms[i] = Long.parseLong(id.substring(0, dash));
            seq[i] = Long.parseLong(id.substring(dash + 1));
          }
          try (PreparedStatement ps = c.prepareStatement(mark)) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            ps.setArray(2, c.createArrayOf("bigint", ms));
            ps.setArray(3, c.createArrayOf("bigint", seq));
            ps.executeUpdate();
          }
        }
      }
    }
  }

  /** {@code n} entries shaped like the relay's, XADD in pipelines of 1,000, spread over the shards. */
  private void rawXadd(String schema, String prefix, int n) {
    byte[][] keys = new byte[config.shards()][];
    for (int s = 0; s < keys.length; s++) {
      keys[s] = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, s).getBytes(StandardCharsets.UTF_8);
    }
    Instant now = Instant.now();
    for (int done = 0; done < n; ) {
      int count = Math.min(1000, n - done);
      try (Pipeline p = pipelined()) {
        for (int i = 0; i < count; i++) {
          Payment pay = payments("x-", done + i, 1).get(0);
          StreamMessage m = new StreamMessage(UUID.randomUUID(), done + i, PaymentEvents.TOPIC,
              PaymentEvents.CREATED, pay.paymentId(), Map.of("content-type", "application/json"), now,
              payload(pay));
          p.xadd(keys[(done + i) % keys.length], XAddParams.xAddParams(), StreamFormat.encode(m));
        }
        p.sync();
      }
      done += count;
    }
  }

  private Pipeline pipelined() {
    if (redis instanceof redis.clients.jedis.RedisClient c) {
      return c.pipelined();
    }
    throw new IllegalStateException("pipelines need a RedisClient, was " + redis.getClass().getSimpleName());
  }

  /**
   * The consumer's transaction without handoff: the inbox markers (handoff's statement) and the charges (the
   * ledger's statement) of {@code batch} messages, one transaction per batch, {@code workers} threads.
   */
  private double rawConsumer(String schema, int n) {
    String marker = "INSERT INTO " + schema + ".inbox (consumer_group, message_id, stream_id, outcome)"
        + " SELECT ?, m, s, 'processed' FROM unnest(?::uuid[], ?::text[]) AS u(m, s) ORDER BY m"
        + " ON CONFLICT DO NOTHING RETURNING message_id";
    String charge = "INSERT INTO " + schema + ".charge (ledger, payment_id, message_id, amount_cents)"
        + " SELECT ?, m.payment_id, m.message_id, m.amount_cents"
        + " FROM unnest(?::varchar[], ?::uuid[], ?::bigint[]) AS m(payment_id, message_id, amount_cents)"
        + " WHERE NOT EXISTS (SELECT 1 FROM " + schema + ".payment p WHERE p.payment_id = m.payment_id AND p.poison)"
        + " RETURNING payment_id";
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int w = 0; w < config.workers(); w++) {
      threads.add(new Thread(() -> {
        try (Connection tx = dataSource.getConnection()) {
          tx.setAutoCommit(false);
          while (true) {
            long base = next.getAndAdd(config.batch());
            if (base >= n) {
              return;
            }
            int count = (int) Math.min(config.batch(), n - base);
            List<Payment> ps = payments("p-", base, count);
            UUID[] ids = new UUID[count];
            String[] streamIds = new String[count];
            String[] paymentIds = new String[count];
            Long[] amounts = new Long[count];
            for (int i = 0; i < count; i++) {
              ids[i] = UUID.randomUUID();
              streamIds[i] = "1-" + (base + i);
              paymentIds[i] = ps.get(i).paymentId();
              amounts[i] = ps.get(i).amountCents();
            }
            try (PreparedStatement m = tx.prepareStatement(marker)) {
              m.setString(1, "raw");
              m.setArray(2, tx.createArrayOf("uuid", ids));
              m.setArray(3, tx.createArrayOf("text", streamIds));
              drain(m.executeQuery());
            }
            try (PreparedStatement c = tx.prepareStatement(charge)) {
              c.setString(1, "raw");
              Array a = tx.createArrayOf("varchar", paymentIds);
              c.setArray(2, a);
              c.setArray(3, tx.createArrayOf("uuid", ids));
              c.setArray(4, tx.createArrayOf("bigint", amounts));
              drain(c.executeQuery());
            }
            tx.commit();
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "bench-raw-consumer-" + w));
    }
    threads.forEach(Thread::start);
    joinAll(threads);
    if (failure.get() != null) {
      throw new LedgerException("raw consumer baseline failed: " + failure.get(), failure.get());
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  private static void drain(ResultSet rs) throws SQLException {
    try (rs) {
      while (rs.next()) {
        rs.getString(1);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Phase 2 and 3: end to end

  private Run endToEnd(String name, String schema, String prefix, String idPrefix, double rate, double consumerLimit,
      Duration duration, boolean drainAfter) {
    event("%s: %s for %ds, %d producer(s) x %d payment(s)/tx, relay, %d worker(s) x batch %d, %d shards", name,
        rate == 0 ? "flat out" : String.format("%,.0f payments/s", rate), duration.toSeconds(), config.producers(),
        config.producerBatch(), config.workers(), config.batch(), config.shards());
    long origin = System.nanoTime();
    Timings timings = new Timings(origin);
    AtomicLong paid = new AtomicLong();
    AtomicLong charged = new AtomicLong();
    AtomicLong unrecorded = new AtomicLong();
    PaymentService service = new PaymentService(dataSource, schema, config.topic());
    Relay relay = relay(schema, prefix, "bench-relay");
    long limitStart = System.nanoTime();
    AtomicLong limited = new AtomicLong();
    LedgerConsumer consumer = ledgerConsumer(schema, prefix, "bench-" + idPrefix.replace("-", ""),
        new ConsumerListener() {
      @Override
      public void handled(InboundMessage m) {
        long now = System.nanoTime();
        long seq = seqOf(m.key());
        if (seq >= 0) {
          if (timings.committedAt(seq) < 0) {
            unrecorded.incrementAndGet();
          }
          timings.charged(seq, now);
        }
        charged.incrementAndGet();
      }

      @Override
      public void batchCommitted(int size, Duration elapsed) {
        if (consumerLimit > 0) {
          // Pacing: this worker waits until the group's budget allows the entries it just settled.
          long due = limitStart + (long) (limited.addAndGet(size) / consumerLimit * 1e9);
          long wait = due - System.nanoTime();
          if (wait > 0) {
            pause(wait / 1_000_000);
          }
        }
      }
    });
    StreamConsumer probe = probe(schema, prefix);
    relay.start();
    consumer.start();

    List<Sample> samples = new CopyOnWriteArrayList<>();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> {
      long next = System.nanoTime();
      while (sampling.get()) {
        samples.add(sample(schema, probe, origin, paid.get(), charged.get()));
        Sample s = samples.get(samples.size() - 1);
        if (samples.size() > 1) {
          Sample p = samples.get(samples.size() - 2);
          double dt = s.t() - p.t();
          event("  %5.1fs  paid %,7.0f/s  charged %,7.0f/s  outbox %,8d  stream backlog %,8d  pending %,5d"
              + "  heap %,5d MB  db %,6.0f tx/s", s.t(), (s.paid() - p.paid()) / dt, (s.charged() - p.charged()) / dt,
              s.unpublished(), s.streamBacklog(), s.pending(), s.heapUsed() >> 20,
              (s.xactCommit() - p.xactCommit()) / dt);
        }
        next += 1_000_000_000L;
        long wait = next - System.nanoTime();
        if (wait > 0) {
          pause(wait / 1_000_000);
        }
      }
    }, "bench-sampler");
    sampler.setDaemon(true);
    sampler.start();

    // Producers
    long t0 = System.nanoTime();
    long end = t0 + duration.toNanos();
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> producers = new ArrayList<>();
    int pb = config.producerBatch();
    double perProducer = rate / config.producers();
    for (int p = 0; p < config.producers(); p++) {
      producers.add(new Thread(() -> {
        long k = 0;
        try {
          while (true) {
            if (rate > 0) {
              long due = t0 + (long) (k * pb / perProducer * 1e9);
              long wait = due - System.nanoTime();
              if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
              }
            }
            if (System.nanoTime() >= end) {
              return;
            }
            long base = next.getAndAdd(pb);
            service.payAll(payments(idPrefix, base, pb));
            long now = System.nanoTime();
            for (int i = 0; i < pb; i++) {
              timings.committed(base + i, now);
            }
            paid.addAndGet(pb);
            k++;
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "bench-producer-" + p));
    }
    producers.forEach(Thread::start);
    joinAll(producers);
    long stopped = System.nanoTime();
    if (failure.get() != null) {
      sampling.set(false);
      consumer.close(Duration.ofSeconds(5));
      relay.close(Duration.ofSeconds(1));
      probe.close();
      throw new LedgerException("producer failed: " + failure.get(), failure.get());
    }
    long total = paid.get();
    double drainSeconds = Double.NaN;
    boolean drained = false;
    if (drainAfter) {
      long deadline = stopped + Math.max(Duration.ofSeconds(60).toNanos(), 4 * duration.toNanos());
      while (System.nanoTime() < deadline) {
        if (charged.get() >= total) {
          drained = true;
          break;
        }
        pause(5);
      }
      drainSeconds = (System.nanoTime() - stopped) / 1e9;
      event("  producers stopped after %,d payments; %s in %.2fs", total, drained ? "every one charged" :
          "NOT drained (" + charged.get() + " charged)", drainSeconds);
    }
    sampling.set(false);
    try {
      sampler.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    samples.add(sample(schema, probe, origin, paid.get(), charged.get()));
    consumer.close(Duration.ofSeconds(10));
    relay.close(Duration.ofSeconds(5));
    probe.close();
    return analyse(name, rate, consumerLimit, timings, t0 - origin, stopped - origin, total, charged.get(),
        unrecorded.get(), drainSeconds, drained, samples);
  }

  private static long seqOf(String key) {
    if (key == null) {
      return -1;
    }
    int dash = key.lastIndexOf('-');
    try {
      return Long.parseLong(key.substring(dash + 1));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private Run analyse(String name, double rate, double consumerLimit, Timings timings, long startNs, long stopNs,
      long paid, long charged, long unrecorded, double drainSeconds, boolean drained, List<Sample> samples) {
    double seconds = (stopNs - startNs) / 1e9;
    long warmupEndNs = startNs + (long) (config.warmupSeconds() * 1e9);
    // Latencies of payments committed after the warm-up, and charges per second of charge time.
    long[] lat = new long[(int) paid];
    int m = 0;
    int secs = (int) Math.ceil((samples.get(samples.size() - 1).t())) + 1;
    List<List<Long>> perSec = new ArrayList<>();
    for (int i = 0; i < secs; i++) {
      perSec.add(new ArrayList<>());
    }
    long chargedInWindow = 0;
    long[] histogram = new long[BUCKETS_MS.length];
    for (long seq = 0; seq < paid; seq++) {
      long c = timings.committedAt(seq);
      long ch = timings.chargedAt(seq);
      if (ch < 0) {
        continue;
      }
      if (ch >= warmupEndNs && ch <= stopNs) {
        chargedInWindow++;
      }
      if (c < 0 || c < warmupEndNs) {
        continue;
      }
      long l = Math.max(0, ch - c);
      lat[m++] = l;
      int sec = (int) (ch / 1_000_000_000L);
      if (sec < secs) {
        perSec.get(sec).add(l);
      }
      double ms = l / 1e6;
      int b = 0;
      while (ms > BUCKETS_MS[b]) {
        b++;
      }
      histogram[b]++;
    }
    long[] sorted = Arrays.copyOf(lat, m);
    Arrays.sort(sorted);
    List<Double> t = new ArrayList<>();
    List<double[]> v = new ArrayList<>();
    for (int s = 0; s < secs; s++) {
      List<Long> xs = perSec.get(s);
      if (xs.isEmpty()) {
        continue;
      }
      long[] a = xs.stream().mapToLong(Long::longValue).sorted().toArray();
      t.add(s + 1.0);
      v.add(new double[] {pct(a, 0.50), pct(a, 0.99), a[a.length - 1] / 1e6, a.length});
    }
    double[] secT = t.stream().mapToDouble(Double::doubleValue).toArray();
    double[] p50s = v.stream().mapToDouble(x -> x[0]).toArray();
    double[] p99s = v.stream().mapToDouble(x -> x[1]).toArray();
    double[] maxs = v.stream().mapToDouble(x -> x[2]).toArray();
    double[] counts = v.stream().mapToDouble(x -> x[3]).toArray();

    double window = (stopNs - warmupEndNs) / 1e9;
    Sample first = null;
    Sample last = null;
    Sample mid = null;
    long peakBacklog = 0;
    long peakHeap = 0;
    long peakAfterGc = 0;
    for (Sample s : samples) {
      peakBacklog = Math.max(peakBacklog, s.unpublished() + s.streamBacklog() + s.pending());
      peakHeap = Math.max(peakHeap, s.heapUsed());
      peakAfterGc = Math.max(peakAfterGc, s.heapAfterGc());
      if (first == null && s.t() * 1e9 >= warmupEndNs) {
        first = s;
      }
      if (mid == null && s.t() * 1e9 >= (startNs + stopNs) / 2) {
        mid = s;
      }
      if (s.t() * 1e9 <= stopNs) {
        last = s;
      }
    }
    double dbTps = first != null && last != null && last.t() > first.t()
        ? (last.xactCommit() - first.xactCommit()) / (last.t() - first.t()) : Double.NaN;
    double growth = mid != null && last != null && last.t() > mid.t()
        ? (backlog(last) - backlog(mid)) / (last.t() - mid.t()) : 0;
    double endToEnd = paid / (seconds + (drained ? drainSeconds : Double.NaN));
    Run run = new Run(name, rate, consumerLimit, seconds, paid, charged, paid / seconds, chargedInWindow / window,
        endToEnd, m, unrecorded, pct(sorted, 0.50), pct(sorted, 0.95), pct(sorted, 0.99),
        m == 0 ? Double.NaN : sorted[m - 1] / 1e6, drainSeconds, drained, dbTps, growth, peakBacklog, peakHeap,
        peakAfterGc, List.copyOf(samples), secT, p50s, p99s, maxs, counts, histogram);
    event("  => %s: produced %,.0f/s, charged %,.0f/s (after %.0fs warm-up), end to end %,.0f/s; commit-to-charge"
        + " p50 %.1f ms p95 %.1f ms p99 %.1f ms max %.1f ms (%,d samples); db %,.0f tx/s; backlog growth %,.0f/s;"
        + " peak heap %,d MB%s", name, run.producedRate(), run.windowThroughput(), config.warmupSeconds(),
        drained ? run.endToEnd() : 0, run.p50(), run.p95(), run.p99(), run.max(), m, dbTps, growth, peakHeap >> 20,
        rate > 0 ? (run.sustained() ? "; SUSTAINED" : "; not sustained") : "");
    out.printf("e2e %s: payments %d charges %d%n", name, paid, charged);
    return run;
  }

  private static long backlog(Sample s) {
    return s.unpublished() + s.streamBacklog() + s.pending();
  }

  private static double pct(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))] / 1e6;
  }

  private Sample sample(String schema, StreamConsumer probe, long origin, long paid, long charged) {
    long unpublished = -1;
    long xact = -1;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM " + schema + ".outbox WHERE published_at IS"
          + " NULL), (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())")) {
        rs.next();
        unpublished = rs.getLong(1);
        xact = rs.getLong(2);
      }
    } catch (SQLException e) {
      // a missed sample; the timeline shows -1
    }
    long backlog = -1;
    long pending = -1;
    try {
      pending = probe.status().pending();
      // Derived rather than counted: counting a long stream costs Redis time the consumers need (~2 µs an entry).
      // Every paid payment not yet charged is unpublished, in a stream undelivered, or pending.
      backlog = unpublished < 0 ? -1 : Math.max(0, paid - charged - unpublished - pending);
    } catch (RuntimeException e) {
      // a missed sample
    }
    MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    return new Sample((System.nanoTime() - origin) / 1e9, paid, charged, unpublished, backlog, pending,
        heap.getUsed(), heapAfterLastGc(), xact);
  }

  /** Heap in use right after the most recent garbage collection: the live set, as near as the JVM tells. */
  static long heapAfterLastGc() {
    long bestEnd = -1;
    long used = 0;
    for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof com.sun.management.GarbageCollectorMXBean g && g.getLastGcInfo() != null) {
        var info = g.getLastGcInfo();
        if (info.getEndTime() > bestEnd) {
          bestEnd = info.getEndTime();
          long sum = 0;
          for (var pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == java.lang.management.MemoryType.HEAP
                && info.getMemoryUsageAfterGc().containsKey(pool.getName())) {
              sum += info.getMemoryUsageAfterGc().get(pool.getName()).getUsed();
            }
          }
          used = sum;
        }
      }
    }
    return used;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Helpers

  private Relay relay(String schema, String prefix, String owner) {
    return Relay.builder(dataSource, redis)
        .schema(schema)
        .keyPrefix(prefix)
        .topic(config.topic())
        .owner(owner)
        .outboxRetention(config.outboxRetention())
        .maintenanceInterval(config.maintenanceInterval())
        .build();
  }

  private LedgerConsumer ledgerConsumer(String schema, String prefix, String name, ConsumerListener listener) {
    return LedgerConsumer.builder(dataSource, redisServer)
        .redisConfig(redisConfig)
        .schema(schema)
        .keyPrefix(prefix)
        .topic(config.topic())
        .consumerName(name)
        .workers(config.workers())
        .batchSize(config.batch())
        .block(Duration.ofMillis(500))
        .persistStats(false)
        .listener(listener)
        .build();
  }

  private StreamConsumer probe(String schema, String prefix) {
    return StreamConsumer.builder(dataSource, redisServer)
        .redisConfig(redisConfig)
        .schema(schema)
        .keyPrefix(prefix)
        .topic(config.topic())
        .group(LedgerConsumer.DEFAULT_GROUP)
        .statusScanLimit(1)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        })
        .build();
  }

  /** Published rows as a relay leaves them, inserted in one statement, then VACUUM ANALYZE. */
  private void retain(String schema, long rows) {
    exec("INSERT INTO " + schema + ".outbox (message_id, topic, shard, message_key, type, payload, headers,"
        + " created_at, stream_ms, stream_seq, published_at)"
        + " SELECT gen_random_uuid(), '" + PaymentEvents.TOPIC + "', i % " + config.shards() + ", 'old-' || i, '"
        + PaymentEvents.CREATED + "', convert_to('{\"payment_id\":\"old-' || i || '\",\"account\":\"acct-'"
        + " || (i % 1000 + 1) || '\",\"amount_cents\":1250}', 'UTF8'), '{\"content-type\":\"application/json\"}',"
        + " now() - interval '1 hour', 1, i, now() - interval '1 hour' FROM generate_series(1, " + rows + ") i");
    exec("VACUUM ANALYZE " + schema + ".outbox");
  }

  private String aux(String suffix) {
    return config.schema() + "_" + suffix;
  }

  private String auxPrefix(String suffix) {
    return config.keyPrefix() + "-" + suffix;
  }

  /** What a schema holds before a run: see {@link #seedHistory}. */
  private enum History { NONE, WITHOUT_OUTBOX_ROWS, FULL }

  private void prepareAux(String schema, String prefix, History history) {
    exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    deleteKeys(prefix + ":*");
    LedgerMigrations.migrate(dataSource, schema);
    if (history != History.NONE) {
      seedHistory(schema, history == History.WITHOUT_OUTBOX_ROWS);
    }
  }

  /**
   * Settled payments from before the run (payment, charge, inbox marker and, unless {@code emptyOutbox}, their
   * published outbox rows, as a relay leaves them until retention purges them), analysed, so that the run starts
   * where a service that has been running would: with statistics that describe its tables. On tables created a
   * second earlier PostgreSQL plans with guesses until autovacuum's first ANALYZE (up to a minute), and a plan
   * cached from those guesses (a hash join over a "tiny" payment table) can cost O(table) per batch for the whole
   * run. The relay protects itself from this (it plans each time while the outbox is small); the sample ledger's
   * own queries do not.
   */
  private void seedHistory(String schema, boolean emptyOutbox) {
    String ids = " FROM generate_series(1, " + HISTORY + ") i";
    exec("INSERT INTO " + schema + ".payment (payment_id, account, amount_cents, created_at)"
        + " SELECT 'history-' || i, 'acct-' || (i % 1000 + 1), 1250, now() - interval '1 day'" + ids);
    exec("WITH h AS (SELECT 'history-' || i AS payment_id, gen_random_uuid() AS message_id" + ids + "),"
        + " m AS (INSERT INTO " + schema + ".inbox (consumer_group, message_id, stream_id, processed_at)"
        + " SELECT '" + LedgerConsumer.DEFAULT_GROUP + "', message_id, NULL, now() - interval '1 day' FROM h)"
        + " INSERT INTO " + schema + ".charge (ledger, payment_id, message_id, amount_cents, charged_at)"
        + " SELECT '" + LedgerConsumer.DEFAULT_GROUP + "', payment_id, message_id, 1250, now() - interval '1 day'"
        + " FROM h");
    if (!emptyOutbox) {
      // Published an hour ago: inside the default retention (7 days), so the relay keeps them through the run.
      retain(schema, HISTORY);
    }
    exec("VACUUM ANALYZE " + schema + ".payment, " + schema + ".charge, " + schema + ".inbox, " + schema
        + ".outbox");
  }

  private void cleanUp(String schema, String prefix) {
    if (!config.keep()) {
      exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      deleteKeys(prefix + ":*");
    }
  }

  private void deleteKeys(String pattern) {
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = redis.scan(cursor, new ScanParams().match(pattern).count(1000));
      if (!page.getResult().isEmpty()) {
        redis.del(page.getResult().toArray(String[]::new));
      }
      cursor = page.getCursor();
    } while (!"0".equals(cursor));
  }

  private void requireFresh(String schema, String prefix) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, schema + ".payment");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (rs.getBoolean(1) && queryLong("SELECT count(*) FROM " + schema + ".payment") > 0) {
          throw new LedgerException("schema '" + schema + "' already holds payments; the benchmark needs a fresh one"
              + " (pass another --schema)");
        }
      }
    } catch (SQLException e) {
      throw new LedgerException("could not check schema '" + schema + "': " + e.getMessage(), e);
    }
    for (int shard = 0; shard < config.shards(); shard++) {
      String key = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        throw new LedgerException("Redis already holds stream '" + key + "'; the benchmark needs fresh keys (pass"
            + " another --key-prefix)");
      }
    }
  }

  private long queryLong(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new LedgerException("benchmark query failed: " + e.getMessage(), e);
    }
  }

  private void exec(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new LedgerException("benchmark statement failed: " + e.getMessage(), e);
    }
  }

  static void joinAll(List<Thread> threads) {
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LedgerException("the benchmark was interrupted");
      }
    }
  }

  static void pause(long millis) {
    try {
      Thread.sleep(Math.max(0, millis));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LedgerException("the benchmark was interrupted");
    }
  }

  private synchronized void event(String format, Object... args) {
    out.printf("%7.1fs  %s%n", (System.nanoTime() - started) / 1e9, String.format(format, args));
    out.flush();
  }
}
