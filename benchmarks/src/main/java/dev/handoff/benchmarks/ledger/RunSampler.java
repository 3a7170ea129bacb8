package dev.handoff.benchmarks.ledger;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.testing.tools.TimedLog;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * The end-to-end run's timeline: a {@link Bench.Sample} once a second on a thread of its own, each one printed. Its
 * own database transactions (its query and the probe's status) are counted, so that the run's
 * {@code xact_commit} delta can be taken without them.
 */
final class RunSampler {

  private final CountingDataSource dataSource;
  private final StreamConsumer probe;
  private final String schema;
  private final long origin;
  private final LongSupplier paid;
  private final LongSupplier charged;
  private final TimedLog log;
  private final List<Bench.Sample> samples = new CopyOnWriteArrayList<>();
  private final AtomicBoolean sampling = new AtomicBoolean(true);
  private final Thread thread = new Thread(this::sampleEverySecond, "bench-sampler");
  private volatile long ownBeforeFirst = -1;
  private volatile long ownBeforeLast;

  /**
   * @param dataSource the sampler's own connections, which {@code probe} must use too, so that its transactions are
   *     counted
   * @param probe a never-started consumer of the ledger's group, for its pending count
   */
  RunSampler(CountingDataSource dataSource, StreamConsumer probe, String schema, long origin, LongSupplier paid,
      LongSupplier charged, TimedLog log) {
    this.dataSource = dataSource;
    this.probe = probe;
    this.schema = schema;
    this.origin = origin;
    this.paid = paid;
    this.charged = charged;
    this.log = log;
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Stops sampling without waiting: the run failed. */
  void abandon() {
    sampling.set(false);
  }

  /** Stops sampling, takes the last sample and returns them all. */
  List<Bench.Sample> finish() {
    sampling.set(false);
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    samples.add(sample());
    return samples;
  }

  private void sampleEverySecond() {
    long next = System.nanoTime();
    while (sampling.get()) {
      samples.add(sample());
      Bench.Sample s = samples.get(samples.size() - 1);
      if (samples.size() > 1) {
        Bench.Sample p = samples.get(samples.size() - 2);
        double dt = s.t() - p.t();
        log.event("  %5.1fs  paid %,7.0f/s  charged %,7.0f/s  outbox %,8d  stream backlog %,8d  pending %,5d"
            + "  heap %,5d MB  db %,6.0f tx/s", s.t(), (s.paid() - p.paid()) / dt, (s.charged() - p.charged()) / dt,
            s.unpublished(), s.streamBacklog(), s.pending(), s.heapUsed() >> 20,
            (s.xactCommit() - p.xactCommit()) / dt);
      }
      next += 1_000_000_000L;
      long wait = next - System.nanoTime();
      if (wait > 0) {
        BenchThreads.pause(wait / 1_000_000);
      }
    }
  }

  /**
   * The sampler's own transactions that the {@code xact_commit} delta from the first sample to the last can hold:
   * from the first sample's query (which reads the counter before it commits) to the last one's, exclusive.
   */
  long ownCommits() {
    return ownBeforeLast - Math.max(0, ownBeforeFirst);
  }

  private Bench.Sample sample() {
    long own = dataSource.commits();
    if (ownBeforeFirst < 0) {
      ownBeforeFirst = own;
    }
    ownBeforeLast = own;
    long paidNow = paid.getAsLong();
    long chargedNow = charged.getAsLong();
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
      backlog = unpublished < 0 ? -1 : Math.max(0, paidNow - chargedNow - unpublished - pending);
    } catch (RuntimeException e) {
      // a missed sample
    }
    return new Bench.Sample((System.nanoTime() - origin) / 1e9, paidNow, chargedNow, unpublished, backlog, pending,
        Heap.used(), Heap.afterLastGc(), xact);
  }
}
