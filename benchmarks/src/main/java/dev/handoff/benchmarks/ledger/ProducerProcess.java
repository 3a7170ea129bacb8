package dev.handoff.benchmarks.ledger;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.TopicConfig;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One producer process of a multi-process shape ({@link ProducerProcesses} starts it): its sessions write payments
 * the way the parent's in-process producers do. Once its pool is up it prints {@code ready} and reads
 * {@code go <from> <until>} on standard input: instants of {@link System#nanoTime()}, which on Linux is one clock for
 * every process of the machine. It reports each commit as {@code c <base> <count> <nanos>}, and ends with
 * {@code end <payments>}; a failure ends it with exit code 1.
 */
public final class ProducerProcess {

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
    PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
    AtomicLong paid = new AtomicLong();
    try (HikariDataSource db = new HikariDataSource(pool)) {
      PaymentService service = new PaymentService(db, schema, TopicConfig.of(PaymentEvents.TOPIC).withShards(shards));
      RawProducerBaseline inserts = new RawProducerBaseline(schema, shards);
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
      synchronized (out) {
        out.append("ready\n").flush();
      }
      String[] go = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine()
          .split(" ");
      long from = Long.parseLong(go[1]);
      long until = Long.parseLong(go[2]);
      BenchThreads.pause((from - System.nanoTime()) / 1_000_000);
      PacedProducers producers = new PacedProducers("bench-producer-" + index + "-", sessions, perTransaction, rate);
      producers.start(from, until, batch -> {
        if (mode == Mode.HANDOFF) {
          service.payAll(batch);
          return;
        }
        try (Connection tx = db.getConnection()) {
          tx.setAutoCommit(false);
          if (mode == Mode.RAW) {
            inserts.insert(tx, batch);
          } else {
            inserts.insertPayments(tx, batch);
          }
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
}
