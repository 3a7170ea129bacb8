package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Statements;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * Which shards have rows waiting for an assignment, for all of a relay's shards in one read-only statement. The
 * assignment itself locks its lease row, so it is a write and a commit even when it finds nothing: asking first
 * keeps an idle shard from costing a durable commit at every wake-up of the relay.
 */
final class PendingWork {

  private final String sql;

  PendingWork(String schema) {
    sql = sql(schema);
  }

  /**
   * The check, one bounded lookup of the unpublished index per shard ({@code LATERAL ... LIMIT 1}). Written as an
   * {@code EXISTS}, it let the planner hash or loop over the whole index instead, the cheapest plan by statistics
   * taken in steady state (almost no row unpublished), and that cost O(backlog) at every check exactly when a backlog
   * built up (docs/performance.md; {@code OutboxQueriesPlanTest} checks the plan).
   */
  static String sql(String schema) {
    return "SELECT s.topic, s.shard FROM unnest(?::text[], ?::int[]) AS s(topic, shard)"
        + " CROSS JOIN LATERAL (SELECT 1 FROM " + schema + ".outbox o WHERE o.topic = s.topic AND o.shard = s.shard"
        + " AND o.published_at IS NULL AND o.stream_ms IS NULL LIMIT 1) AS w";
  }

  /** The shards among {@code shards} that have at least one unassigned row now. */
  Set<ShardId> shardsWithWork(Connection c, Collection<ShardId> shards) throws SQLException {
    if (shards.isEmpty()) {
      return Set.of();
    }
    String[] topics = new String[shards.size()];
    Integer[] numbers = new Integer[shards.size()];
    int i = 0;
    for (ShardId s : shards) {
      topics[i] = s.topic();
      numbers[i++] = s.shard();
    }
    Array topicArray = c.createArrayOf("text", topics);
    Array shardArray = c.createArrayOf("int4", numbers);
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      ps.setArray(1, topicArray);
      ps.setArray(2, shardArray);
      Set<ShardId> out = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new ShardId(rs.getString(1), rs.getInt(2)));
        }
      }
      return out;
    } finally {
      topicArray.free();
      shardArray.free();
    }
  }
}
