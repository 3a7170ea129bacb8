package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Where a run's rows waited, read from the run's own tables before they are dropped, in milliseconds, p50 and p99 of
 * each leg. Where the server records commit timestamps ({@code track_commit_timestamp}, on in the bench's embedded
 * PostgreSQL), a row's path has four legs, each from one server clock: the producer's transaction (its start,
 * {@code outbox.created_at}, to its commit, that of the {@code payment} row), from that commit to the row's stream ID
 * ({@code stream_ms}), from the stream ID to the start of the consumer's transaction ({@code inbox.processed_at}),
 * and that transaction itself (to the commit of the inbox marker). Without commit timestamps the first leg runs from
 * the producer's transaction's start, and the producer's and the consumer's transactions are not known (NaN).
 *
 * <p>handoff's relay assigns the stream ID in its cycle's transaction, before that commits and before the write to
 * Redis; the raw loop takes it from its clock right before its XADD. Handoff's third leg therefore holds its relay's
 * commit and its write to Redis; raw's holds its XADD. Rows created in the run's first {@code warmupSeconds} are
 * left out, as the latency figures leave them out.
 */
public record RowWaits(long rows, Leg producerTransaction, Leg toStream, Leg toConsumer, Leg consumerTransaction) {

  /** One leg's p50 and p99, in milliseconds; NaN when not known. */
  public record Leg(double p50, double p99) {
    static final Leg UNKNOWN = new Leg(Double.NaN, Double.NaN);
  }

  static final RowWaits NONE = new RowWaits(0, Leg.UNKNOWN, Leg.UNKNOWN, Leg.UNKNOWN, Leg.UNKNOWN);

  /** Whether the waits run from the producer's commit: the server gave the commit timestamps of these rows. */
  public boolean fromCommit() {
    return !Double.isNaN(producerTransaction.p50());
  }

  /** The waits of the rows whose key starts with {@code idPrefix} (the run's payment IDs), handled by {@code group}. */
  static RowWaits read(DataSource dataSource, String schema, String idPrefix, String group, double warmupSeconds) {
    try (Connection c = dataSource.getConnection()) {
      String committed = commitTimestamps(c) ? "extract(epoch FROM pg_xact_commit_timestamp(%s.xmin)) * 1000"
          : "NULL::numeric";
      String sql = "WITH run AS (SELECT extract(epoch FROM o.created_at) * 1000 AS started, o.stream_ms AS s,"
          + " extract(epoch FROM i.processed_at) * 1000 AS p, " + committed.formatted("pay") + " AS pc, "
          + committed.formatted("i") + " AS ic FROM " + schema + ".outbox o"
          + " JOIN " + schema + ".inbox i ON i.message_id = o.message_id AND i.consumer_group = ?"
          + " JOIN " + schema + ".payment pay ON pay.payment_id = o.message_key"
          + " WHERE o.message_key LIKE ? AND o.stream_ms IS NOT NULL),"
          + " w AS (SELECT started, coalesce(pc, started) AS c, s, p, pc, ic FROM run"
          + " WHERE started >= (SELECT min(started) FROM run) + ? * 1000)"
          + " SELECT count(*), " + percentiles("pc - started") + ", " + percentiles("s - c") + ", "
          + percentiles("p - s") + ", " + percentiles("ic - p") + " FROM w";
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setString(1, group);
        ps.setString(2, idPrefix.replace("_", "\\_").replace("%", "\\%") + "%");
        ps.setDouble(3, warmupSeconds);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          long rows = rs.getLong(1);
          return rows == 0 ? NONE : new RowWaits(rows, leg(rs, 2), leg(rs, 4), leg(rs, 6), leg(rs, 8));
        }
      }
    } catch (SQLException e) {
      throw new LedgerException("could not read where the rows of " + schema + " waited: " + e.getMessage(), e);
    }
  }

  private static boolean commitTimestamps(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT setting FROM pg_settings WHERE name = 'track_commit_timestamp'")) {
      return rs.next() && "on".equals(rs.getString(1));
    }
  }

  private static String percentiles(String leg) {
    return "percentile_cont(0.5) WITHIN GROUP (ORDER BY " + leg + "), percentile_cont(0.99) WITHIN GROUP (ORDER BY "
        + leg + ")";
  }

  /** A leg from two columns; SQL NULL (no commit timestamps) reads as NaN. */
  private static Leg leg(ResultSet rs, int column) throws SQLException {
    double p50 = rs.getDouble(column);
    boolean known = !rs.wasNull();
    double p99 = rs.getDouble(column + 1);
    return known ? new Leg(p50, p99) : Leg.UNKNOWN;
  }
}
