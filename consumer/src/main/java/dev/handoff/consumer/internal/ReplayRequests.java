package dev.handoff.consumer.internal;

import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.admin.DeadLetterAdmin.ReplayRequest;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Optional;
import java.util.function.Function;

/**
 * The {@code replay_request} table: an operator's request to replay a range of the outbox through a group
 * ({@link #request}), claimed and run by one of the group's running consumers ({@link #runNext}).
 *
 * <p>Thread-safe: it keeps no state; a request is claimed by a row lock held while it runs.
 */
final class ReplayRequests {

  private final String insert;
  private final String claim;
  private final String finish;
  private final String read;

  ReplayRequests(String schema) {
    String table = schema + ".replay_request";
    this.insert = "INSERT INTO " + table + " (consumer_group, topic, appended_from, appended_to) VALUES (?, ?, ?, ?)"
        + " RETURNING id";
    this.claim = "SELECT id, appended_from, appended_to FROM " + table + " WHERE consumer_group = ? AND topic = ?"
        + " AND finished_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
    this.finish = "UPDATE " + table + " SET finished_at = now(), handled = ?, duplicates = ?, failed = ?"
        + " WHERE id = ?";
    this.read = "SELECT id, consumer_group, topic, appended_from, appended_to, finished_at, handled, duplicates,"
        + " failed FROM " + table + " WHERE id = ?";
  }

  /** Records a request for {@code group} to replay what was appended to {@code topic} from {@code from}. */
  long request(Connection c, String group, String topic, Instant from, Instant to) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, insert)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      ps.setTimestamp(3, Timestamp.from(from));
      ps.setTimestamp(4, to == null ? null : Timestamp.from(to));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The request {@code id}, if it exists. */
  Optional<ReplayRequest> read(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, read)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        Timestamp to = rs.getTimestamp(5);
        Timestamp finished = rs.getTimestamp(6);
        return Optional.of(new ReplayRequest(rs.getLong(1), rs.getString(2), rs.getString(3),
            rs.getTimestamp(4).toInstant(), to == null ? null : to.toInstant(),
            finished == null ? null : finished.toInstant(), rs.getLong(7), rs.getLong(8), rs.getLong(9)));
      }
    }
  }

  /**
   * Claims the group's oldest open request that no other consumer runs, runs it through {@code replay} while holding
   * its row lock on {@code c} (whose transaction is open), and records its outcome; the caller commits.
   *
   * @return the outcome, or empty when no request was open
   */
  Optional<ReplayResult> runNext(Connection c, String group, String topic,
      Function<OutboxRange, ReplayResult> replay) throws SQLException {
    long id;
    Instant from;
    Instant to;
    try (PreparedStatement ps = Statements.prepare(c, claim)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        id = rs.getLong(1);
        from = rs.getTimestamp(2).toInstant();
        Timestamp until = rs.getTimestamp(3);
        to = until == null ? null : until.toInstant();
      }
    }
    ReplayResult r = replay.apply(to == null ? OutboxRange.appendedSince(from) : OutboxRange.appendedBetween(from, to));
    try (PreparedStatement ps = Statements.prepare(c, finish)) {
      ps.setLong(1, r.handled());
      ps.setLong(2, r.duplicates());
      ps.setLong(3, r.failed());
      ps.setLong(4, id);
      ps.executeUpdate();
    }
    return Optional.of(r);
  }
}
