package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Statements;
import dev.handoff.core.internal.StreamId;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The SQL of the {@code relay_lease} and {@code relay_member} tables. Every time is the database's clock, so
 * relays on machines with skewed clocks still agree on who holds a lease.
 */
final class LeaseQueries {

  /** A lease this relay holds. */
  /**
   * A lease as taken: its epoch, the database's record of the stream, and how many rows its pending batch holds (which
   * the stream may hold already, a relay having stopped between its XADD and its mark).
   */
  record Lease(long epoch, StreamId lastAssigned, StreamId watermark, long entriesAdded, int pendingBatch,
      boolean paused) {}

  private final String ensure;
  private final String otherPrefix;
  private final String acquire;
  private final String release;
  private final String raiseLastAssigned;
  private final String raiseWatermark;
  private final String renewAll;
  private final String liveMembers;
  private final String leave;
  private final String lease;

  LeaseQueries(String schema) {
    this.lease = schema + ".relay_lease";
    String member = schema + ".relay_member";
    ensure = "INSERT INTO " + lease + " (topic, shard, key_prefix) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";
    // One schema, one key prefix: any row under another prefix refuses the relay before it creates a row of its
    // own, which would otherwise claim a new topic's shards for the wrong prefix.
    otherPrefix = "SELECT topic, shard, key_prefix FROM " + lease + " WHERE key_prefix IS DISTINCT FROM ? LIMIT 1";
    // Renewal keeps the epoch; taking a lease that is free or expired bumps it, which fences the former owner.
    acquire = "UPDATE " + lease
        + " SET epoch = CASE WHEN owner = ? THEN epoch ELSE epoch + 1 END, owner = ?,"
        + " expires_at = clock_timestamp() + make_interval(secs => ?), updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND (owner = ? OR owner IS NULL OR expires_at < clock_timestamp())"
        + " RETURNING epoch, last_ms, last_seq, watermark_ms, watermark_seq, entries_added,"
        + " coalesce(cardinality(batch_ids), 0), paused_at IS NOT NULL";
    release = "UPDATE " + lease + " SET owner = NULL, expires_at = '-infinity', updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ?";
    raiseLastAssigned = "UPDATE " + lease + " SET last_ms = ?, last_seq = ?, updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? AND (last_ms, last_seq) < (?, ?)";
    raiseWatermark = "UPDATE " + lease + " SET watermark_ms = ?, watermark_seq = ?, updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? AND (watermark_ms, watermark_seq) < (?, ?)";
    // One statement, so one commit, whatever the number of shards: the membership heartbeat and every lease the
    // relay holds, each keeping its epoch. A lease taken by another relay has another owner or epoch: not touched.
    // Locked in (topic, shard) order, as the relay's multi-shard transactions lock them (topic names are ASCII, so
    // Java's order is the "C" collation's): two of them never wait for each other in a cycle.
    renewAll = "WITH beat AS (INSERT INTO " + member + " (owner) VALUES (?)"
        + " ON CONFLICT (owner) DO UPDATE SET heartbeat_at = now()),"
        + " mine AS (SELECT l.topic, l.shard FROM " + lease + " l"
        + " JOIN unnest(?::text[], ?::int[], ?::bigint[]) AS o(topic, shard, epoch)"
        + " ON l.topic = o.topic AND l.shard = o.shard AND l.epoch = o.epoch"
        + " WHERE l.owner = ? ORDER BY l.topic COLLATE \"C\", l.shard FOR UPDATE OF l)"
        + " UPDATE " + lease + " l SET expires_at = clock_timestamp() + make_interval(secs => ?), updated_at = now()"
        + " FROM mine WHERE l.topic = mine.topic AND l.shard = mine.shard RETURNING l.topic, l.shard, l.epoch";
    // Forgetting long-dead members and counting the live ones is one statement: the count reads the snapshot taken
    // before the delete, which only removes members far older than the live ones it counts.
    liveMembers = "WITH gone AS (DELETE FROM " + member
        + " WHERE heartbeat_at < clock_timestamp() - make_interval(secs => ?) RETURNING 1)"
        + " SELECT count(*) FROM " + member + " WHERE heartbeat_at > clock_timestamp() - make_interval(secs => ?)";
    leave = "DELETE FROM " + member + " WHERE owner = ?";
  }

  /**
   * Refuses a relay whose key prefix is not the one this schema's streams are written under.
   *
   * @throws IllegalStateException if some shard of this schema is written under another Redis key prefix
   */
  void requireKeyPrefix(Connection c, String keyPrefix) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, otherPrefix)) {
      ps.setString(1, keyPrefix);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          throw new IllegalStateException("shard " + rs.getString(1) + "/" + rs.getInt(2) + " of this schema is"
              + " relayed to Redis keys with prefix '" + rs.getString(3) + "', but this relay is configured with"
              + " keyPrefix '" + keyPrefix + "'; use one key prefix per schema (or another schema)");
        }
      }
    }
  }

  /** Creates the shard's lease row if needed; call {@link #requireKeyPrefix} first. */
  void ensureRow(Connection c, ShardId shard, String keyPrefix) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, ensure)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setString(3, keyPrefix);
      ps.executeUpdate();
    }
  }

  /** Renews this owner's lease or takes a free or expired one; null when another relay holds it. */
  Lease acquire(Connection c, ShardId shard, String owner, Duration ttl) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, acquire)) {
      ps.setString(1, owner);
      ps.setString(2, owner);
      ps.setDouble(3, ttl.toMillis() / 1000.0);
      ps.setString(4, shard.topic());
      ps.setInt(5, shard.shard());
      ps.setString(6, owner);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        return new Lease(rs.getLong(1), new StreamId(rs.getLong(2), rs.getLong(3)),
            new StreamId(rs.getLong(4), rs.getLong(5)), rs.getLong(6), rs.getInt(7), rs.getBoolean(8));
      }
    }
  }

  /** Records in the lease row that publishing of {@code shard} stops, and why; kept if it was already set. */
  void pause(Connection c, ShardId shard, String owner, long epoch, String reason) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, "UPDATE " + lease + " SET paused_at = coalesce(paused_at,"
        + " now()), paused_reason = coalesce(paused_reason, ?), updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ?")) {
      ps.setString(1, reason);
      ps.setString(2, shard.topic());
      ps.setInt(3, shard.shard());
      ps.setString(4, owner);
      ps.setLong(5, epoch);
      ps.executeUpdate();
    }
  }

  /** Whether the lease row of {@code shard} still says that publishing is paused. */
  boolean paused(Connection c, ShardId shard) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, "SELECT paused_at IS NOT NULL FROM " + lease
        + " WHERE topic = ? AND shard = ?")) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  boolean release(Connection c, ShardId shard, String owner, long epoch) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, release)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setString(3, owner);
      ps.setLong(4, epoch);
      return ps.executeUpdate() == 1;
    }
  }

  /** Raises the last assigned ID (never lowers it), fenced by the epoch. */
  void raiseLastAssigned(Connection c, ShardId shard, String owner, long epoch, StreamId id) throws SQLException {
    raise(c, raiseLastAssigned, shard, owner, epoch, id);
  }

  /** Raises the trim watermark (never lowers it), fenced by the epoch. */
  void raiseWatermark(Connection c, ShardId shard, String owner, long epoch, StreamId id) throws SQLException {
    raise(c, raiseWatermark, shard, owner, epoch, id);
  }

  private static void raise(Connection c, String sql, ShardId shard, String owner, long epoch, StreamId id)
      throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      ps.setLong(1, id.ms());
      ps.setLong(2, id.seq());
      ps.setString(3, shard.topic());
      ps.setInt(4, shard.shard());
      ps.setString(5, owner);
      ps.setLong(6, epoch);
      ps.setLong(7, id.ms());
      ps.setLong(8, id.seq());
      ps.executeUpdate();
    }
  }

  /** How many relays are alive (this one included, whose heartbeat {@link #renewAll} writes); forgets dead ones. */
  int liveMembers(Connection c, Duration ttl) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, liveMembers)) {
      ps.setDouble(1, ttl.toMillis() * 10 / 1000.0);
      ps.setDouble(2, ttl.toMillis() / 1000.0);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return Math.max(1, rs.getInt(1));
      }
    }
  }

  /**
   * Records that this relay is alive and renews the leases of {@code owned} (shard to epoch), in one statement. Only
   * those: a lease row that still names this owner but that the relay does not know it holds (a restarted process
   * under the same owner name that took fewer shards than before) is left to expire, so that another relay takes it.
   *
   * @return the epoch of each lease renewed
   */
  Map<ShardId, Long> renewAll(Connection c, String owner, Duration ttl, Map<ShardId, Long> owned)
      throws SQLException {
    String[] topics = new String[owned.size()];
    Integer[] shards = new Integer[owned.size()];
    Long[] epochs = new Long[owned.size()];
    int i = 0;
    for (Map.Entry<ShardId, Long> e : owned.entrySet()) {
      topics[i] = e.getKey().topic();
      shards[i] = e.getKey().shard();
      epochs[i++] = e.getValue();
    }
    try (PreparedStatement ps = Statements.prepare(c, renewAll)) {
      ps.setString(1, owner);
      ps.setArray(2, c.createArrayOf("text", topics));
      ps.setArray(3, c.createArrayOf("int4", shards));
      ps.setArray(4, c.createArrayOf("int8", epochs));
      ps.setString(5, owner);
      ps.setDouble(6, ttl.toMillis() / 1000.0);
      Map<ShardId, Long> renewed = new HashMap<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          renewed.put(new ShardId(rs.getString(1), rs.getInt(2)), rs.getLong(3));
        }
      }
      return renewed;
    }
  }

  void leave(Connection c, String owner) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, leave)) {
      ps.setString(1, owner);
      ps.executeUpdate();
    }
  }
}
