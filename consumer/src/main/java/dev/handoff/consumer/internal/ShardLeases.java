package dev.handoff.consumer.internal;

import dev.handoff.consumer.status.OrderedShard;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The {@code consumer_lease} and {@code consumer_member} tables of ordered groups: one row per (group, topic,
 * shard) holding its owner, fencing epoch, position and blocking message, and one row per live consumer. Every
 * statement that changes a shard on behalf of its owner names the owner and the epoch, so a consumer that lost the
 * lease changes nothing.
 *
 * <p>Thread-safe: it keeps no state.
 */
final class ShardLeases {

  /** A lease just taken: its epoch, and whether the shard waits for an operator. */
  record Taken(long epoch, boolean stopped) {}

  /** An operator's answer to a stopped shard. */
  enum Resume { RETRY, SKIP }

  private final String group;
  private final String topic;
  private final String ensure;
  private final String heartbeat;
  private final String live;
  private final String acquire;
  private final String renew;
  private final String release;
  private final String leave;
  private final String fence;
  private final String hold;
  private final String block;
  private final String takeResume;
  private final String status;
  private final String exist;

  ShardLeases(String schema, String group, String topic) {
    this.group = group;
    this.topic = topic;
    String leases = schema + ".consumer_lease";
    String members = schema + ".consumer_member";
    String mine = " WHERE consumer_group = ? AND topic = ?";
    String owned = mine + " AND shard = ? AND owner = ? AND epoch = ?";
    this.ensure = "INSERT INTO " + leases + " (consumer_group, topic, shard) SELECT ?, ?, s FROM generate_series(0, ?)"
        + " s ON CONFLICT DO NOTHING";
    this.heartbeat = "INSERT INTO " + members + " (consumer_group, topic, owner) VALUES (?, ?, ?) ON CONFLICT"
        + " (consumer_group, topic, owner) DO UPDATE SET heartbeat_at = now()";
    this.live = "SELECT count(*) FROM " + members + mine
        + " AND heartbeat_at > now() - make_interval(secs => ?)";
    this.acquire = "UPDATE " + leases + " SET owner = ?, epoch = epoch + 1, expires_at = now() + make_interval(secs"
        + " => ?)" + mine + " AND shard = ? AND (owner IS NULL OR expires_at < now()) RETURNING epoch,"
        + " stopped_at IS NOT NULL";
    this.renew = "UPDATE " + leases + " SET expires_at = now() + make_interval(secs => ?)" + mine
        + " AND owner = ? AND shard = ANY (?) RETURNING shard, epoch";
    this.release = "UPDATE " + leases + " SET owner = NULL, expires_at = '-infinity'" + owned + " RETURNING shard";
    this.leave = "DELETE FROM " + members + mine + " AND owner = ? RETURNING owner";
    this.fence = "UPDATE " + leases + " SET position = ?, position_at = now(), blocked_stream_id = NULL,"
        + " blocked_message_id = NULL, blocked_since = NULL, blocked_deliveries = NULL, blocked_error = NULL"
        + owned + " RETURNING shard";
    this.hold = "UPDATE " + leases + " SET epoch = epoch" + owned + " RETURNING shard";
    this.block = "UPDATE " + leases + " SET blocked_since = CASE WHEN blocked_stream_id = ? THEN blocked_since"
        + " ELSE now() END, blocked_stream_id = ?, blocked_message_id = ?, blocked_deliveries = ?,"
        + " blocked_error = ?, stopped_at = CASE WHEN ? THEN coalesce(stopped_at, now()) END" + owned
        + " RETURNING shard";
    this.takeResume = "UPDATE " + leases + " l SET resume_requested = NULL, stopped_at = NULL FROM (SELECT"
        + " consumer_group, topic, shard, resume_requested FROM " + leases + owned
        + " AND resume_requested IS NOT NULL FOR UPDATE) r WHERE l.consumer_group = r.consumer_group AND l.topic ="
        + " r.topic AND l.shard = r.shard RETURNING r.resume_requested";
    this.exist = "SELECT 1 FROM " + leases + mine + " LIMIT 1";
    this.status = "SELECT shard, owner, epoch, expires_at, expires_at > now() AS live, position, position_at,"
        + " blocked_stream_id, blocked_message_id, blocked_since, blocked_deliveries, blocked_error, stopped_at,"
        + " resume_requested FROM " + leases + mine + " ORDER BY shard";
  }

  /** Creates the rows of the topic's shards that do not exist yet. */
  void ensureRows(Connection c, int shards) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, ensure)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      ps.setInt(3, shards - 1);
      ps.executeUpdate();
    }
  }

  /** Records that {@code owner} is alive. */
  void heartbeat(Connection c, String owner) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, heartbeat)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      ps.setString(3, owner);
      ps.executeUpdate();
    }
  }

  /** How many consumers of the group beat within {@code ttl}; at least 1. */
  int liveMembers(Connection c, Duration ttl) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, live)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      ps.setDouble(3, ttl.toMillis() / 1000.0);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return Math.max(1, rs.getInt(1));
      }
    }
  }

  /** Takes the shard if it is free or its lease expired; null if another consumer holds it. */
  Taken acquire(Connection c, int shard, String owner, Duration ttl) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, acquire)) {
      ps.setString(1, owner);
      ps.setDouble(2, ttl.toMillis() / 1000.0);
      ps.setString(3, group);
      ps.setString(4, topic);
      ps.setInt(5, shard);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new Taken(rs.getLong(1), rs.getBoolean(2)) : null;
      }
    }
  }

  /**
   * Renews the leases {@code owner} holds of {@code held} (shard to epoch), in one statement; returns the shards
   * whose lease another consumer holds now (another owner, or another epoch).
   */
  List<Integer> renew(Connection c, String owner, Map<Integer, Long> held, Duration ttl) throws SQLException {
    if (held.isEmpty()) {
      return List.of();
    }
    Map<Integer, Long> found = new HashMap<>();
    try (PreparedStatement ps = Statements.prepare(c, renew)) {
      ps.setDouble(1, ttl.toMillis() / 1000.0);
      ps.setString(2, group);
      ps.setString(3, topic);
      ps.setString(4, owner);
      ps.setArray(5, c.createArrayOf("integer", held.keySet().toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.put(rs.getInt(1), rs.getLong(2));
        }
      }
    }
    List<Integer> lost = new ArrayList<>();
    held.forEach((shard, epoch) -> {
      if (!epoch.equals(found.get(shard))) {
        lost.add(shard);
      }
    });
    return lost;
  }

  /** Gives the shard back, if {@code owner} still holds it with {@code epoch}. */
  void release(Connection c, int shard, String owner, long epoch) throws SQLException {
    try (PreparedStatement ps = owned(c, release, shard, owner, epoch, 1)) {
      ps.executeQuery().close();
    }
  }

  /** Leaves the group's members, so that the others count one consumer fewer at once. */
  void leave(Connection c, String owner) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, leave)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      ps.setString(3, owner);
      ps.executeQuery().close();
    }
  }

  /**
   * In the batch's transaction: records {@code position} as the shard's and clears what blocked it, if
   * {@code owner} still holds the shard with {@code epoch}. The row stays locked until the transaction ends, so a
   * takeover waits for it. Returns whether the lease holds; if not, the caller must roll back. A null
   * {@code position} only checks the lease ({@link #hold}).
   */
  boolean fence(Connection c, int shard, String owner, long epoch, String position) throws SQLException {
    if (position == null) {
      return hold(c, shard, owner, epoch);
    }
    try (PreparedStatement ps = Statements.prepare(c, fence)) {
      ps.setString(1, position);
      bindOwned(ps, 2, shard, owner, epoch);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** {@link #fence} without moving the position: a requested retry's check of the lease, locking its row. */
  boolean hold(Connection c, int shard, String owner, long epoch) throws SQLException {
    try (PreparedStatement ps = owned(c, hold, shard, owner, epoch, 1); ResultSet rs = ps.executeQuery()) {
      return rs.next();
    }
  }

  /** Records the message that holds the shard up ({@code stopped}: until an operator acts), under the lease. */
  void block(Connection c, int shard, String owner, long epoch, Delivery d, String error, boolean stopped)
      throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, block)) {
      ps.setString(1, d.id);
      ps.setString(2, d.id);
      ps.setObject(3, d.message == null ? null : d.message.messageId());
      ps.setInt(4, (int) Math.min(Integer.MAX_VALUE, d.deliveries));
      ps.setString(5, error);
      ps.setBoolean(6, stopped);
      bindOwned(ps, 7, shard, owner, epoch);
      ps.executeQuery().close();
    }
  }

  /** An operator's answer to the stopped shard, taken (cleared with the stop) under the lease; null if none. */
  Resume takeResume(Connection c, int shard, String owner, long epoch) throws SQLException {
    try (PreparedStatement ps = owned(c, takeResume, shard, owner, epoch, 1)) {
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Resume.valueOf(rs.getString(1).toUpperCase(java.util.Locale.ROOT)) : null;
      }
    }
  }

  /** Whether the group has lease rows on the topic: whether it ran ordered. */
  boolean exist(Connection c) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, exist)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Every shard's row, in shard order. */
  List<OrderedShard> status(Connection c) throws SQLException {
    List<OrderedShard> out = new ArrayList<>();
    try (PreparedStatement ps = Statements.prepare(c, status)) {
      ps.setString(1, group);
      ps.setString(2, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String blockedId = rs.getString("blocked_stream_id");
          OrderedShard.Blocked blocked = blockedId == null ? null : new OrderedShard.Blocked(blockedId,
              rs.getObject("blocked_message_id", UUID.class), instant(rs.getTimestamp("blocked_since")),
              rs.getInt("blocked_deliveries"), rs.getString("blocked_error"),
              instant(rs.getTimestamp("stopped_at")), rs.getString("resume_requested"));
          String owner = rs.getBoolean("live") ? rs.getString("owner") : null;
          out.add(new OrderedShard(rs.getInt("shard"), owner, rs.getLong("epoch"),
              rs.getString("position"), instant(rs.getTimestamp("position_at")), blocked));
        }
      }
    }
    return out;
  }

  private PreparedStatement owned(Connection c, String sql, int shard, String owner, long epoch, int first)
      throws SQLException {
    PreparedStatement ps = Statements.prepare(c, sql);
    bindOwned(ps, first, shard, owner, epoch);
    return ps;
  }

  private void bindOwned(PreparedStatement ps, int first, int shard, String owner, long epoch) throws SQLException {
    ps.setString(first, group);
    ps.setString(first + 1, topic);
    ps.setInt(first + 2, shard);
    ps.setString(first + 3, owner);
    ps.setLong(first + 4, epoch);
  }

  private static Instant instant(Timestamp t) {
    return t == null ? null : t.toInstant();
  }
}
