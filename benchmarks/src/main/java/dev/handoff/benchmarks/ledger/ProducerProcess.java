package dev.handoff.benchmarks.ledger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.TopicConfig;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentService;
import dev.handoff.outbox.Outbox;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One producer process of a multi-process shape ({@link ProducerProcesses} starts it): its sessions write payments
 * the way the parent's in-process producers do. Once its pool is up it prints {@code ready} and reads
 * {@code go <from> <until>} on standard input: instants of {@link System#nanoTime()}, which on Linux is one clock for
 * every process of the machine. It reports each commit as {@code c <base> <count> <nanos>}, and ends with
 * {@code end <payments>}; a failure ends it with exit code 1.
 */
public final class ProducerProcess {

  /** Transactions each process runs and rolls back before it is ready. */
  static final int WARM_UP_TRANSACTIONS = 2_000;

  /** What a producer transaction writes. */
  enum Mode { HANDOFF, RAW, BARE }

  private ProducerProcess() {}

  /**
   * Arguments: mode, JDBC URL, schema, shards, sessions, payments per transaction, rate of this process (0 = flat
   * out), this process's index, the number of processes, the payment ID prefix.
   */
  public static void main(String[] args) throws Exception {
    Mode mode = Mode.valueOf(args[0]);
    String schema = args[2];
    int shards = Integer.parseInt(args[3]);
    int sessions = Integer.parseInt(args[4]);
    int perTransaction = Integer.parseInt(args[5]);
    double rate = Double.parseDouble(args[6]);
    int index = Integer.parseInt(args[7]);
    int processes = Integer.parseInt(args[8]);
    String idPrefix = args[9];
    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl(args[1]);
    pool.setMaximumPoolSize(sessions);
    pool.setPoolName("bench-producer-process-" + index);
    pool.addDataSourceProperty("ApplicationName", "bench-producer-process-" + index); // found in pg_stat_activity
    PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
    AtomicLong paid = new AtomicLong();
    try (HikariDataSource db = new HikariDataSource(pool)) {
      PaymentService service = new PaymentService(db, schema, TopicConfig.of(PaymentEvents.TOPIC).withShards(shards));
      Writes writes = new Writes(mode, new RawProducerBaseline(schema, shards),
          Outbox.builder().schema(schema).topic(TopicConfig.of(PaymentEvents.TOPIC).withShards(shards)).build());
      Thread flusher = new Thread(() -> {
        while (true) {
          BenchThreads.pause(200); // the parent's once-a-second sample sees commits within a fraction of a second
          synchronized (out) {
            out.flush();
          }
        }
      }, "bench-producer-flush");
      flusher.setDaemon(true);
      flusher.start();
      db.getConnection().close(); // the pool is up before the start, not in the measured time
      String cpus = System.getProperty(CpuPinning.PRODUCER_CPUS);
      if (cpus != null) {
        CpuPinning.pinBackends(backendPids(db, sessions), cpus);
      }
      warmUp(db, writes, sessions, perTransaction, idPrefix + "warm-" + index + "-");
      synchronized (out) {
        out.append("ready\n").flush();
      }
      String[] go = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine()
          .split(" ");
      long from = Long.parseLong(go[1]);
      long until = Long.parseLong(go[2]);
      BenchThreads.pause((from - System.nanoTime()) / 1_000_000);
      PacedProducers producers = new PacedProducers("bench-producer-" + index + "-", sessions, perTransaction, rate,
          index * sessions);
      producers.start(from, until, batch -> {
        if (mode == Mode.HANDOFF) {
          service.payAll(batch);
          return;
        }
        try (Connection tx = db.getConnection()) {
          tx.setAutoCommit(false);
          writes.write(tx, batch);
          tx.commit();
        }
      }, (base, count) -> BenchPayments.batch(idPrefix, base, count), (base, count, nanos) -> {
        paid.addAndGet(count);
        synchronized (out) {
          out.append("c ").append(Long.toString(base)).append(' ').append(Integer.toString(count)).append(' ')
              .append(Long.toString(nanos)).append('\n');
        }
      }, (local, pb) -> (local / pb * processes + index) * pb);
      producers.join();
      if (producers.failure() != null) {
        producers.failure().printStackTrace();
        System.exit(1);
      }
    }
    synchronized (out) {
      out.append("end ").append(Long.toString(paid.get())).append('\n');
      out.flush();
    }
  }

  /** The backend pids of all {@code sessions} connections of {@code db}, each held while the others are taken. */
  private static List<Long> backendPids(HikariDataSource db, int sessions) throws SQLException {
    List<Connection> held = new ArrayList<>();
    List<Long> pids = new ArrayList<>();
    try {
      for (int i = 0; i < sessions; i++) {
        Connection c = db.getConnection();
        held.add(c);
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
          rs.next();
          pids.add(rs.getLong(1));
        }
      }
    } finally {
      for (Connection c : held) {
        c.close();
      }
    }
    return pids;
  }

  /**
   * What one producer transaction of {@code mode} writes, before its commit. In the measured runs a HANDOFF
   * transaction goes through the sample's {@code PaymentService} instead, which commits itself.
   */
  private record Writes(Mode mode, RawProducerBaseline inserts, Outbox outbox) {
    void write(Connection tx, List<Payment> batch) throws SQLException {
      switch (mode) {
        case HANDOFF -> {
          inserts.insertPayments(tx, batch);
          outbox.appendAll(tx, batch.stream().map(PaymentEvents::created).toList());
        }
        case RAW -> inserts.insert(tx, batch);
        case BARE -> inserts.insertPayments(tx, batch);
      }
    }
  }

  /**
   * Runs {@link #WARM_UP_TRANSACTIONS} of this mode's transactions on all sessions and rolls each back: the JIT has
   * compiled the driver's and the append's code before the start, as in a service that has been running (a cold JVM
   * compiles for seconds, and on a small machine takes that CPU from the run). Nothing stays in the database.
   */
  private static void warmUp(HikariDataSource db, Writes writes, int sessions, int perTransaction, String idPrefix) {
    AtomicLong next = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    List<Exception> failures = new CopyOnWriteArrayList<>();
    for (int t = 0; t < sessions; t++) {
      Thread thread = new Thread(() -> {
        for (long n = next.getAndIncrement(); n < WARM_UP_TRANSACTIONS && failures.isEmpty();
            n = next.getAndIncrement()) {
          try (Connection tx = db.getConnection()) {
            tx.setAutoCommit(false);
            writes.write(tx, BenchPayments.batch(idPrefix, n * perTransaction, perTransaction));
            tx.rollback();
          } catch (SQLException | RuntimeException e) {
            failures.add(e);
          }
        }
      }, "bench-producer-warm-up-" + t);
      thread.start();
      threads.add(thread);
    }
    BenchThreads.joinAll(threads);
    if (!failures.isEmpty()) {
      throw new IllegalStateException("producer warm-up failed: " + failures.get(0), failures.get(0));
    }
  }
}
