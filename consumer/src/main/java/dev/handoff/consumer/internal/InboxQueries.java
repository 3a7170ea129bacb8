package dev.handoff.consumer.internal;

import dev.handoff.core.internal.Statements;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/** All SQL on the {@code inbox} table. */
final class InboxQueries {

  static final String PROCESSED = "processed";
  static final String DEAD = "dead";

  private final String insert;
  private final String insertSealed;
  private final String delete;
  private final String revive;
  private final String countRetained;
  private final String purgeBatch;
  private final String processed;
  private final String countInOutbox;
  private final String anyBefore;

  InboxQueries(String schema) {
    String table = schema + ".inbox";
    // A marker whose message the outbox still holds can meet that message again (a replay from the outbox, or the
    // relay publishing it again after Redis lost data), whatever the marker's age.
    String inOutbox = "EXISTS (SELECT 1 FROM " + schema + ".outbox o WHERE o.message_id = i.message_id)";
    this.insert = insertMarkers(table, "");
    // The seal is a setting local to the transaction (migration V10), set by this statement's one-row subquery.
    this.insertSealed = insertMarkers(table, ", (SELECT set_config('" + HandlerTransaction.SEAL_SETTING
        + "', ?, true)) AS seal");
    this.delete = "DELETE FROM " + table + " WHERE consumer_group = ? AND message_id = ?";
    this.revive = "UPDATE " + table + " SET outcome = 'processed', processed_at = now(), stream_id = ?"
        + " WHERE consumer_group = ? AND message_id = ? AND outcome = 'dead'";
    String streamOrder = "(split_part(stream_id, '-', 1)::bigint, split_part(stream_id, '-', 2)::bigint)";
    this.countRetained = "SELECT count(*) FROM " + table + " WHERE consumer_group = ? AND processed_at < ?"
        + " AND (stream_id IS NULL OR " + streamOrder + " >= (?, ?))";
    this.purgeBatch = "DELETE FROM " + table + " WHERE ctid IN (SELECT i.ctid FROM " + table + " i"
        + " WHERE consumer_group = ? AND processed_at < ? AND stream_id IS NOT NULL AND " + streamOrder
        + " < (?, ?) AND NOT " + inOutbox + " LIMIT 10000)";
    this.anyBefore = "SELECT EXISTS (SELECT 1 FROM " + table + " WHERE consumer_group = ? AND processed_at < ?)";
    this.countInOutbox = "SELECT count(*) FROM (SELECT 1 FROM " + table + " i WHERE consumer_group = ?"
        + " AND processed_at < ? AND " + inOutbox + " LIMIT 100000) h";
    this.processed = "SELECT message_id FROM " + table + " WHERE consumer_group = ? AND message_id = ANY(?)"
        + " AND outcome = 'processed'";
  }

  // One statement for the whole batch. ORDER BY gives concurrent batches one lock order on the primary key, so two
  // consumers that hold overlapping entries (a reclaim racing a slow owner) wait instead of deadlocking.
  private static String insertMarkers(String table, String alsoFrom) {
    return "INSERT INTO " + table + " (consumer_group, message_id, stream_id, outcome)"
        + " SELECT ?, m, s, ? FROM unnest(?::uuid[], ?::text[]) AS u(m, s)" + alsoFrom + " ORDER BY m"
        + " ON CONFLICT DO NOTHING RETURNING message_id";
  }

  /** Which of {@code ids} have a marker of outcome processed in {@code group}. */
  Set<UUID> processed(Connection c, String group, List<UUID> ids) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, processed)) {
      ps.setString(1, group);
      ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
      Set<UUID> out = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getObject(1, UUID.class));
        }
      }
      return out;
    }
  }

  /** Inserts markers; returns the IDs that were new (the others are duplicates). IDs must be distinct. */
  Set<UUID> insert(Connection tx, String group, List<UUID> ids, List<String> streamIds, String outcome)
      throws SQLException {
    return insert(tx, group, ids, streamIds, outcome, null);
  }

  /**
   * Inserts the markers as {@link #insert} does and, in the same statement, the seal of the batch's transaction
   * ({@link HandlerTransaction}): no round trip of its own. Nothing at all when {@code ids} is empty.
   */
  Set<UUID> insertSealed(Connection tx, String group, List<UUID> ids, List<String> streamIds, String outcome,
      UUID seal) throws SQLException {
    return insert(tx, group, ids, streamIds, outcome, seal);
  }

  private Set<UUID> insert(Connection tx, String group, List<UUID> ids, List<String> streamIds, String outcome,
      UUID seal) throws SQLException {
    if (ids.isEmpty()) {
      return Set.of();
    }
    try (PreparedStatement ps = Statements.prepare(tx, seal == null ? insert : insertSealed)) {
      Array idArray = tx.createArrayOf("uuid", ids.toArray());
      Array streamArray = tx.createArrayOf("text", streamIds.toArray());
      ps.setString(1, group);
      ps.setString(2, outcome);
      ps.setArray(3, idArray);
      ps.setArray(4, streamArray);
      if (seal != null) {
        ps.setString(5, seal.toString());
      }
      Set<UUID> inserted = new HashSet<>(ids.size() * 2);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          inserted.add(rs.getObject(1, UUID.class));
        }
      }
      return inserted;
    }
  }

  void delete(Connection tx, String group, UUID id) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, delete)) {
      ps.setString(1, group);
      ps.setObject(2, id);
      ps.executeUpdate();
    }
  }

  /** Turns a {@code dead} marker into {@code processed}; returns whether there was one. */
  boolean revive(Connection tx, String group, UUID id, String streamId) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, revive)) {
      ps.setString(1, streamId);
      ps.setString(2, group);
      ps.setObject(3, id);
      return ps.executeUpdate() == 1;
    }
  }

  /** Markers older than {@code before} whose stream ID is at or above {@code floor} (or unknown). */
  long countRetained(Connection c, String group, Instant before, long[] floor) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, countRetained)) {
      ps.setString(1, group);
      ps.setTimestamp(2, Timestamp.from(before));
      ps.setLong(3, floor[0]);
      ps.setLong(4, floor[1]);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Whether the group has any marker processed before {@code before}. */
  boolean anyBefore(Connection c, String group, Instant before) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, anyBefore)) {
      ps.setString(1, group);
      ps.setTimestamp(2, Timestamp.from(before));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  /** Markers older than {@code before} whose message the outbox still holds, counted up to 100,000. */
  long countInOutbox(Connection c, String group, Instant before) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, countInOutbox)) {
      ps.setString(1, group);
      ps.setTimestamp(2, Timestamp.from(before));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Deletes up to 10,000 purgeable markers: older than {@code before}, below the Redis {@code floor}, and whose
   * message the outbox no longer holds; returns how many.
   */
  int purgeBatch(Connection c, String group, Instant before, long[] floor) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, purgeBatch)) {
      ps.setString(1, group);
      ps.setTimestamp(2, Timestamp.from(before));
      ps.setLong(3, floor[0]);
      ps.setLong(4, floor[1]);
      return ps.executeUpdate();
    }
  }
}
