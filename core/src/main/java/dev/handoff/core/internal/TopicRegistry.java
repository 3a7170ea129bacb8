package dev.handoff.core.internal;

import dev.handoff.core.TopicMismatchException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Optional;

/**
 * Each topic's shard count, declared once per schema in the {@code topic} table: the first component that states a
 * count records it; a later one that states a count must state the same ({@link #requireSame}), and one that states
 * none reads it ({@link #read}).
 *
 * <p>Thread-safe: it keeps no state.
 */
public final class TopicRegistry {

  /** The recorded count, and when it was recorded. */
  public record Declared(int shards, Instant declaredAt) {}

  private final String declare;
  private final String read;

  public TopicRegistry(String schema) {
    String table = schema + ".topic";
    // One round trip: the row this call inserted, or the one already there.
    this.declare = "WITH ins AS (INSERT INTO " + table + " (name, shards) VALUES (?, ?) ON CONFLICT (name) DO NOTHING"
        + " RETURNING shards, declared_at) SELECT shards, declared_at FROM ins"
        + " UNION ALL SELECT shards, declared_at FROM " + table + " WHERE name = ? LIMIT 1";
    this.read = "SELECT shards, declared_at FROM " + table + " WHERE name = ?";
  }

  /** Records {@code shards} for {@code topic} unless a count is on record, and returns the count on record. */
  public Declared declare(Connection c, String topic, int shards) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, declare)) {
      ps.setString(1, topic);
      ps.setInt(2, shards);
      ps.setString(3, topic);
      Optional<Declared> d = one(ps);
      if (d.isPresent()) {
        return d.get();
      }
    }
    // The row was committed by another transaction after this statement's snapshot was taken (the insert waited for
    // it): a new statement sees it.
    return read(c, topic).orElseThrow(() -> new SQLException("the declaration of topic '" + topic
        + "' vanished while it was read"));
  }

  /** The count on record for {@code topic}, if any. */
  public Optional<Declared> read(Connection c, String topic) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, read)) {
      ps.setString(1, topic);
      return one(ps);
    }
  }

  /** Declares {@code stated} and fails unless it is the count on record; returns the record. */
  public Declared requireSame(Connection c, String topic, int stated, String who) throws SQLException {
    Declared d = declare(c, topic, stated);
    if (d.shards() != stated) {
      throw mismatch(topic, d, stated, who);
    }
    return d;
  }

  /** The one-line refusal of {@code who} stating {@code stated} shards where {@code declared} is on record. */
  public static TopicMismatchException mismatch(String topic, Declared declared, int stated, String who) {
    return new TopicMismatchException(topic, declared.shards(), stated, "topic '" + topic + "' has "
        + declared.shards() + " shard(s), as declared in the database on " + declared.declaredAt() + ", and " + who
        + " states " + stated + ": give every outbox, relay and consumer of a topic the same count, or none so that"
        + " they read it (changing a topic's count: docs/scaling.md#choosing-the-shard-count)");
  }

  private static Optional<Declared> one(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        return Optional.empty();
      }
      Timestamp at = rs.getTimestamp(2);
      return Optional.of(new Declared(rs.getInt(1), at.toInstant()));
    }
  }
}
