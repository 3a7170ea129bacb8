package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.Payment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * The consumer's transaction without handoff, the baseline of the ledger consumer: the inbox markers (handoff's
 * statement) and the charges (the ledger's statement) of {@code batch} messages, one transaction per batch,
 * {@code workers} threads.
 */
record RawConsumerBaseline(DataSource dataSource, String schema, int workers, int batch) {

  /** Writes the markers and charges of {@code n} messages; returns messages per second. */
  double run(int n) {
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int w = 0; w < workers; w++) {
      threads.add(new Thread(() -> {
        try (Connection tx = dataSource.getConnection()) {
          tx.setAutoCommit(false);
          while (true) {
            long base = next.getAndAdd(batch);
            if (base >= n) {
              return;
            }
            int count = (int) Math.min(batch, n - base);
            List<Payment> ps = BenchPayments.batch("p-", base, count);
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
            write(tx, schema, "raw", ids, streamIds, paymentIds, amounts);
            tx.commit();
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "bench-raw-consumer-" + w));
    }
    threads.forEach(Thread::start);
    BenchThreads.joinAll(threads);
    if (failure.get() != null) {
      throw new LedgerException("raw consumer baseline failed: " + failure.get(), failure.get());
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  /**
   * The inbox markers and charges of one batch on {@code tx}, which the caller commits: the ledger consumer's two
   * statements, shared with the raw pipeline's consumer so that both baselines write the same rows.
   */
  static void write(Connection tx, String schema, String group, UUID[] ids, String[] streamIds, String[] paymentIds,
      Long[] amounts) throws SQLException {
    String marker = "INSERT INTO " + schema + ".inbox (consumer_group, message_id, stream_id, outcome)"
        + " SELECT ?, m, s, 'processed' FROM unnest(?::uuid[], ?::text[]) AS u(m, s) ORDER BY m"
        + " ON CONFLICT DO NOTHING RETURNING message_id";
    String charge = "INSERT INTO " + schema + ".charge (ledger, payment_id, message_id, amount_cents)"
        + " SELECT ?, m.payment_id, m.message_id, m.amount_cents"
        + " FROM unnest(?::varchar[], ?::uuid[], ?::bigint[]) AS m(payment_id, message_id, amount_cents)"
        + " WHERE NOT EXISTS (SELECT 1 FROM " + schema + ".payment p WHERE p.payment_id = m.payment_id AND p.poison)"
        + " RETURNING payment_id";
    try (PreparedStatement m = tx.prepareStatement(marker)) {
      m.setString(1, group);
      m.setArray(2, tx.createArrayOf("uuid", ids));
      m.setArray(3, tx.createArrayOf("text", streamIds));
      drain(m.executeQuery());
    }
    try (PreparedStatement c = tx.prepareStatement(charge)) {
      c.setString(1, group);
      c.setArray(2, tx.createArrayOf("varchar", paymentIds));
      c.setArray(3, tx.createArrayOf("uuid", ids));
      c.setArray(4, tx.createArrayOf("bigint", amounts));
      drain(c.executeQuery());
    }
  }

  private static void drain(ResultSet rs) throws SQLException {
    try (rs) {
      while (rs.next()) {
        rs.getString(1);
      }
    }
  }
}
