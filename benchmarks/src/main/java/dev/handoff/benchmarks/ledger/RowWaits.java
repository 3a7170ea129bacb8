package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Where a run's rows waited, read from the run's own tables before they are dropped, in milliseconds: from the
 * producer's transaction ({@code outbox.created_at}, the transaction's start) to the row's stream ID
 * ({@code stream_ms}: handoff's relay assigns it in its cycle's transaction, before that commits and before the write
 * to Redis; the raw loop takes it from its clock right before its XADD), and from the stream ID to the consumer's
 * transaction ({@code inbox.processed_at}, that transaction's start). Handoff's second leg therefore holds its relay's
 * commit and its write to Redis; raw's holds its XADD. Rows created in the run's first {@code warmupSeconds} are left
 * out, as the latency figures leave them out. One clock only where the database runs on this machine.
 */
public record RowWaits(long rows, double toStreamP50, double toStreamP99, double toConsumerP50, double toConsumerP99) {

  static final RowWaits NONE = new RowWaits(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);

  /** The waits of the rows whose key starts with {@code idPrefix} (the run's payment IDs), handled by {@code group}. */
  static RowWaits read(DataSource dataSource, String schema, String idPrefix, String group, double warmupSeconds) {
    String sql = "WITH run AS (SELECT o.created_at, o.stream_ms, i.processed_at FROM " + schema + ".outbox o"
        + " JOIN " + schema + ".inbox i ON i.message_id = o.message_id AND i.consumer_group = ?"
        + " WHERE o.message_key LIKE ? AND o.stream_ms IS NOT NULL),"
        + " w AS (SELECT extract(epoch FROM created_at) * 1000 AS c, stream_ms AS s,"
        + " extract(epoch FROM processed_at) * 1000 AS p FROM run"
        + " WHERE created_at >= (SELECT min(created_at) FROM run) + make_interval(secs => ?))"
        + " SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY s - c),"
        + " percentile_cont(0.99) WITHIN GROUP (ORDER BY s - c), percentile_cont(0.5) WITHIN GROUP (ORDER BY p - s),"
        + " percentile_cont(0.99) WITHIN GROUP (ORDER BY p - s) FROM w";
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, group);
      ps.setString(2, idPrefix.replace("_", "\\_").replace("%", "\\%") + "%");
      ps.setDouble(3, warmupSeconds);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        long rows = rs.getLong(1);
        return rows == 0 ? NONE : new RowWaits(rows, rs.getDouble(2), rs.getDouble(3), rs.getDouble(4),
            rs.getDouble(5));
      }
    } catch (SQLException e) {
      throw new LedgerException("could not read where the rows of " + schema + " waited: " + e.getMessage(), e);
    }
  }
}
