package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * What a consumer did, counted as it happens (a {@link ConsumerListener}), and flushed as deltas into
 * {@code consumer_stats} so that {@code verify} in another process shows them. Work lost to a crash between a commit
 * and its callback is not counted; its redelivery is (as a duplicate). Thread-safe.
 */
public final class ConsumerCounters implements ConsumerListener {

  final AtomicLong handled = new AtomicLong();
  final AtomicLong duplicates = new AtomicLong();
  final AtomicLong failed = new AtomicLong();
  final AtomicLong deadLettered = new AtomicLong();
  final AtomicLong lost = new AtomicLong();
  final AtomicLong reclaimed = new AtomicLong();
  private final long[] flushed = new long[3];

  @Override
  public void handled(InboundMessage message) {
    handled.incrementAndGet();
  }

  @Override
  public void duplicate(InboundMessage message) {
    duplicates.incrementAndGet();
  }

  @Override
  public void failed(InboundMessage message, Throwable error, Duration backoff) {
    failed.incrementAndGet();
  }

  @Override
  public void deadLettered(String streamKey, String streamId, UUID messageId, String error) {
    deadLettered.incrementAndGet();
  }

  @Override
  public void lost(String streamKey, String streamId) {
    lost.incrementAndGet();
  }

  @Override
  public void reclaimed(String streamKey, int count) {
    reclaimed.addAndGet(count);
  }

  /** Messages whose handler ran and committed. */
  public long handled() {
    return handled.get();
  }

  /** Deliveries skipped because the inbox had the message already. */
  public long duplicates() {
    return duplicates.get();
  }

  /** Failed handler runs (each is retried, or dead-lettered after the last delivery). */
  public long failed() {
    return failed.get();
  }

  public long deadLettered() {
    return deadLettered.get();
  }

  /** Entries claimed from a dead or backing-off consumer ({@code XAUTOCLAIM}). */
  public long reclaimed() {
    return reclaimed.get();
  }

  /** Every settled delivery: handled, duplicate, failed, dead-lettered or lost. */
  public long deliveries() {
    return handled.get() + duplicates.get() + failed.get() + deadLettered.get() + lost.get();
  }

  /** What the consumers of a group flushed to {@code consumer_stats}, over every process and restart. */
  public record Recorded(long deliveries, long duplicatesSkipped, long reclaimed) {}

  /** What the consumers of {@code group} recorded, or empty if none did (consumers built with persistStats off). */
  public static Optional<Recorded> recorded(DataSource dataSource, String schema, String group) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT deliveries, duplicates_skipped, reclaimed FROM "
            + LedgerMigrations.requireValidSchema(schema) + ".consumer_stats WHERE consumer_group = ?")) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(new Recorded(rs.getLong(1), rs.getLong(2), rs.getLong(3))) : Optional.empty();
      }
    } catch (SQLException e) {
      throw new LedgerException("could not read the counters of group '" + group + "': " + e.getMessage(), e);
    }
  }

  /** Adds what was counted since the last flush to {@code consumer_stats} of {@code group}. */
  public synchronized void flush(DataSource dataSource, String schema, String group) throws SQLException {
    long[] now = {deliveries(), duplicates(), reclaimed()};
    long[] delta = {now[0] - flushed[0], now[1] - flushed[1], now[2] - flushed[2]};
    if (delta[0] == 0 && delta[1] == 0 && delta[2] == 0) {
      return;
    }
    String sql = "INSERT INTO " + LedgerMigrations.requireValidSchema(schema) + ".consumer_stats AS s"
        + " (consumer_group, deliveries, duplicates_skipped, reclaimed) VALUES (?, ?, ?, ?)"
        + " ON CONFLICT (consumer_group) DO UPDATE SET deliveries = s.deliveries + excluded.deliveries,"
        + " duplicates_skipped = s.duplicates_skipped + excluded.duplicates_skipped,"
        + " reclaimed = s.reclaimed + excluded.reclaimed, updated_at = now()";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, group);
      ps.setLong(2, delta[0]);
      ps.setLong(3, delta[1]);
      ps.setLong(4, delta[2]);
      ps.executeUpdate();
    }
    System.arraycopy(now, 0, flushed, 0, 3);
  }
}
