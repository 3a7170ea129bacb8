package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Statements;
import dev.handoff.core.internal.StreamId;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The relay's SQL on the {@code outbox} table and the batch it keeps in {@code relay_lease}. Every write is fenced
 * by the lease epoch.
 *
 * <p>A row goes through: unassigned (no stream ID) → member of the shard's pending batch, whose stream IDs are
 * recorded in the lease row before anything is sent → published (its stream ID and publication time on the row).
 * After Redis lost data, published rows above the watermark become unpublished again while keeping their stream
 * IDs ("assigned"), and are sent again with those IDs.
 */
final class OutboxQueries {

  private final String pendingBatch;
  private final String assigned;
  private final String markPublished;
  private final String unassign;
  private final String republish;
  private final String purgeRange;
  private final String firstIdFrom;
  private final String purgeLag;

  OutboxQueries(String schema) {
    String outbox = schema + ".outbox";
    String lease = schema + ".relay_lease";
    String fence = "SELECT 1 FROM " + lease + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ?";
    pendingBatch = "SELECT l.batch_ids IS NOT NULL, o.id, o.message_id, o.message_key, o.type, o.payload,"
        + " o.headers::text, o.created_at, l.batch_ms, l.batch_seq + b.ord - 1"
        + " FROM " + lease + " l"
        + " LEFT JOIN LATERAL unnest(l.batch_ids) WITH ORDINALITY AS b(id, ord) ON true"
        + " LEFT JOIN " + outbox + " o ON o.id = b.id AND o.published_at IS NULL"
        + " WHERE l.topic = ? AND l.shard = ? ORDER BY b.ord";
    assigned = "SELECT true, id, message_id, message_key, type, payload, headers::text, created_at, stream_ms,"
        + " stream_seq FROM " + outbox
        + " WHERE topic = ? AND shard = ? AND published_at IS NULL AND stream_ms IS NOT NULL"
        + " ORDER BY stream_ms, stream_seq LIMIT ?";
    // One statement marks the batches of every shard given: the marks of a busy cycle cost one call, not one per
    // shard, and the function of migration V9 (which says what it does and why) is planned once per server session,
    // not at each call (BatchAssignment says why that matters). The count before this mark comes back with it: lower
    // than what this relay last recorded, and the database lost its own records (BatchMarks).
    markPublished = "SELECT * FROM " + schema + ".relay_mark_batches(?::text[], ?::int[], ?::bigint[], ?::bigint[],"
        + " ?::boolean[], ?, ?::int[], ?::bigint[], ?::bigint[], ?::bigint[])";
    // Each row by the whole key of the unpublished index, one bounded lookup per id, then by ctid, as the mark of
    // migration V9 finds its rows: a join of the outbox to the ids leaves the plan to the statistics, which in steady
    // state say almost no row is unpublished, and then reads the whole unpublished index (hash join) or rescans the
    // ids for every row (nested loop). A LATERAL subquery with LIMIT cannot be flattened into a join.
    unassign = "UPDATE " + outbox + " o SET stream_ms = NULL, stream_seq = NULL"
        + " FROM (SELECT x.tid FROM unnest(?::bigint[]) AS u(id) CROSS JOIN LATERAL (SELECT i.ctid AS tid FROM "
        + outbox + " i WHERE i.topic = ? AND i.shard = ? AND i.id = u.id AND i.published_at IS NULL LIMIT 1) x) t"
        + " WHERE o.ctid = t.tid AND EXISTS (" + fence + ")";
    // After Redis lost a stream: everything at or above the watermark (what some group may not have finished)
    // becomes unpublished again, keeping its stream ID, and Redis's count of added entries starts over.
    republish = "WITH lease AS ("
        + " UPDATE " + lease + " SET entries_added = 0, updated_at = now()"
        + " WHERE topic = ? AND shard = ? AND owner = ? AND epoch = ? RETURNING watermark_ms, watermark_seq)"
        + " UPDATE " + outbox + " o SET published_at = NULL FROM lease"
        + " WHERE o.topic = ? AND o.shard = ? AND o.published_at IS NOT NULL"
        + " AND (o.stream_ms, o.stream_seq) >= (lease.watermark_ms, lease.watermark_seq)"
        + " AND (o.stream_ms, o.stream_seq) >= (?, ?)";
    // One bounded range of the primary key per statement: the rows of [from, to) of the relay's topics, the ones
    // published before the cut deleted and recorded in the purge log in the same statement (no crash can separate
    // the two). A walk along id ranges stays bounded whatever the table holds; a statement that looked for rows
    // past retention with a filter and a LIMIT would read the whole table each time fewer than LIMIT were left.
    String cut = "clock_timestamp() - make_interval(secs => ?)";
    purgeRange = "WITH r AS (SELECT id, created_at, published_at FROM " + outbox
        + " WHERE id >= ? AND id < ? AND topic = ANY(?)),"
        // The ids as one array, not IN (subquery): a semi join leaves the outbox's side to the statistics, and a
        // plan that reads the whole table and hashes it was seen (OutboxQueriesPlanTest).
        + " gone AS (DELETE FROM " + outbox + " o WHERE o.id = ANY (ARRAY(SELECT id FROM r WHERE published_at < "
        + cut + "))"
        + " RETURNING o.topic, o.id, o.created_at),"
        + " logged AS (INSERT INTO " + schema + ".outbox_purged (topic, first_id, last_id, first_created_at,"
        + " last_created_at, rows) SELECT topic, min(id), max(id), min(created_at), max(created_at), count(*)"
        + " FROM gone GROUP BY topic RETURNING rows)"
        + " SELECT (SELECT coalesce(sum(rows), 0) FROM logged), (SELECT count(*) FROM r),"
        + " (SELECT count(*) FROM r WHERE created_at < " + cut + ")";
    firstIdFrom = "SELECT id FROM " + outbox + " WHERE id >= ? AND topic = ANY(?) ORDER BY id LIMIT 1";
    // Bounded: the next rows from where the purge stopped, which is where rows past retention wait.
    purgeLag = "SELECT count(*) FILTER (WHERE published_at < " + cut + "),"
        + " coalesce(extract(epoch FROM clock_timestamp() - min(published_at) FILTER (WHERE published_at < " + cut
        + ")) * 1000, 0), count(*) FROM (SELECT published_at FROM " + outbox
        + " WHERE id >= ? AND topic = ANY(?) ORDER BY id LIMIT ?) p";
  }

  /** The statement {@link #purgeRange} runs; its plan is checked by a test. */
  String purgeRangeSql() {
    return purgeRange;
  }

  /** Rows on their way to the stream; {@code exists} says whether the lease row recorded a pending batch. */
  record Batch(boolean exists, List<OutboxRow> rows) {}

  /** The shard's pending batch, without rows that are published already. */
  Batch pendingBatch(Connection c, ShardId shard) throws SQLException {
    try (PreparedStatement ps = prepare(c, pendingBatch)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      try (ResultSet rs = ps.executeQuery()) {
        return read(rs, shard.topic());
      }
    }
  }

  /** Unpublished rows that keep a stream ID (re-published after Redis lost data), in stream ID order. */
  List<OutboxRow> assigned(Connection c, ShardId shard, int limit) throws SQLException {
    try (PreparedStatement ps = prepare(c, assigned)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setInt(3, limit);
      try (ResultSet rs = ps.executeQuery()) {
        return read(rs, shard.topic()).rows();
      }
    }
  }

  /**
   * Marks rows published with their stream IDs, records Redis's count of added entries and, when {@code endsBatch},
   * clears the pending batch; all fenced by the epoch. Returns the rows marked, or -1 when the lease was lost.
   */
  Mark markPublished(Connection c, ShardId shard, String owner, long epoch, List<OutboxRow> rows,
      long entriesAdded, boolean endsBatch) throws SQLException {
    return RoundTrip.one(c, markPart(shard, owner, epoch, rows, entriesAdded, endsBatch));
  }

  /**
   * What a mark did.
   *
   * @param marked rows marked published, or -1 when the lease was not this relay's any more
   * @param addedBefore the lease's count of entries added before the mark (-1 with the lease gone)
   */
  record Mark(int marked, long addedBefore) {}

  /** {@link #markPublished} as a statement of a {@link RoundTrip}. */
  RoundTrip.Part<Mark> markPart(ShardId shard, String owner, long epoch, List<OutboxRow> rows,
      long entriesAdded, boolean endsBatch) {
    RoundTrip.Part<List<Mark>> all = markAllPart(List.of(new MarkRequest(shard, epoch, rows, entriesAdded, endsBatch)),
        owner);
    return new RoundTrip.Part<>(all.sql(), all.binder(), rs -> all.reader().read(rs).get(0));
  }

  /** The rows of a shard's batch to mark, with what {@link #markPublished} takes for them. */
  record MarkRequest(ShardId shard, long epoch, List<OutboxRow> rows, long entriesAdded, boolean endsBatch) {}

  /** {@link #markPart} for several shards in one statement: a {@link Mark} per request, in their order. */
  RoundTrip.Part<List<Mark>> markAllPart(List<MarkRequest> requests, String owner) {
    int n = requests.size();
    String[] topics = new String[n];
    Integer[] shards = new Integer[n];
    Long[] epochs = new Long[n];
    Long[] added = new Long[n];
    Boolean[] ends = new Boolean[n];
    int rowCount = requests.stream().mapToInt(r -> r.rows().size()).sum();
    Integer[] ords = new Integer[rowCount];
    Long[] ids = new Long[rowCount];
    Long[] ms = new Long[rowCount];
    Long[] seq = new Long[rowCount];
    int j = 0;
    for (int k = 0; k < n; k++) {
      MarkRequest r = requests.get(k);
      topics[k] = r.shard().topic();
      shards[k] = r.shard().shard();
      epochs[k] = r.epoch();
      added[k] = r.entriesAdded();
      ends[k] = r.endsBatch();
      for (OutboxRow row : r.rows()) {
        ords[j] = k + 1;
        ids[j] = row.id();
        ms[j] = row.streamId().ms();
        seq[j++] = row.streamId().seq();
      }
    }
    return new RoundTrip.Part<>(markPublished, (c, ps, first) -> {
      int i = first;
      ps.setArray(i++, c.createArrayOf("text", topics));
      ps.setArray(i++, c.createArrayOf("int4", shards));
      ps.setArray(i++, c.createArrayOf("int8", epochs));
      ps.setArray(i++, c.createArrayOf("int8", added));
      ps.setArray(i++, c.createArrayOf("bool", ends));
      ps.setString(i++, owner);
      ps.setArray(i++, c.createArrayOf("int4", ords));
      ps.setArray(i++, c.createArrayOf("int8", ids));
      ps.setArray(i++, c.createArrayOf("int8", ms));
      ps.setArray(i++, c.createArrayOf("int8", seq));
      return i;
    }, rs -> {
      List<Mark> marks = new ArrayList<>(n);
      while (rs.next()) {
        marks.add(rs.getLong(1) == 0 ? new Mark(-1, -1) : new Mark(rs.getInt(2), rs.getLong(3)));
      }
      if (marks.size() != n) {
        throw new IllegalStateException("the mark answered for " + marks.size() + " of " + n + " shards");
      }
      return marks;
    });
  }

  /** Forgets the stream IDs of rows that Redis refused without holding them, so they get fresh ones. */
  int unassign(Connection c, ShardId shard, String owner, long epoch, long[] ids) throws SQLException {
    Long[] boxed = new Long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      boxed[i] = ids[i];
    }
    try (PreparedStatement ps = prepare(c, unassign)) {
      ps.setArray(1, c.createArrayOf("bigint", boxed));
      ps.setString(2, shard.topic());
      ps.setInt(3, shard.shard());
      ps.setString(4, shard.topic());
      ps.setInt(5, shard.shard());
      ps.setString(6, owner);
      ps.setLong(7, epoch);
      return ps.executeUpdate();
    }
  }

  long republish(Connection c, ShardId shard, String owner, long epoch, StreamId floor) throws SQLException {
    try (PreparedStatement ps = prepare(c, republish)) {
      ps.setString(1, shard.topic());
      ps.setInt(2, shard.shard());
      ps.setString(3, owner);
      ps.setLong(4, epoch);
      ps.setString(5, shard.topic());
      ps.setInt(6, shard.shard());
      ps.setLong(7, floor.ms());
      ps.setLong(8, floor.seq());
      return ps.executeUpdate();
    }
  }

  /**
   * What one purge statement did over an id range: rows deleted, rows of the relay's topics it found there, and how
   * many of those were appended before the cut (the walk goes on while a range holds such rows).
   */
  record PurgedRange(int deleted, long rows, long appendedBeforeCut) {}

  /** Deletes the rows of {@code [fromId, toId)} of {@code topics} published before {@code retention} ago. */
  PurgedRange purgeRange(Connection c, Duration retention, String[] topics, long fromId, long toId)
      throws SQLException {
    try (PreparedStatement ps = prepare(c, purgeRange)) {
      double secs = retention.toMillis() / 1000.0;
      ps.setLong(1, fromId);
      ps.setLong(2, toId);
      ps.setArray(3, c.createArrayOf("text", topics));
      ps.setDouble(4, secs);
      ps.setDouble(5, secs);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new PurgedRange(rs.getInt(1), rs.getLong(2), rs.getLong(3));
      }
    }
  }

  /** The lowest id at or above {@code fromId} of a row of {@code topics}, or -1 when there is none. */
  long firstIdFrom(Connection c, String[] topics, long fromId) throws SQLException {
    try (PreparedStatement ps = prepare(c, firstIdFrom)) {
      ps.setLong(1, fromId);
      ps.setArray(2, c.createArrayOf("text", topics));
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : -1;
      }
    }
  }

  /**
   * Among the next {@code limit} rows of {@code topics} from {@code fromId}: how many were published before
   * {@code retention} ago, how long ago the oldest of them was published (ms), and how many rows were looked at
   * (fewer than {@code limit}: the count covers every row from {@code fromId} on).
   */
  long[] purgeLag(Connection c, Duration retention, String[] topics, long fromId, int limit) throws SQLException {
    try (PreparedStatement ps = prepare(c, purgeLag)) {
      double secs = retention.toMillis() / 1000.0;
      ps.setDouble(1, secs);
      ps.setDouble(2, secs);
      ps.setLong(3, fromId);
      ps.setArray(4, c.createArrayOf("text", topics));
      ps.setInt(5, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), (long) rs.getDouble(2), rs.getLong(3)};
      }
    }
  }

  /** Reads (flag, id, message_id, key, type, payload, headers, created_at, stream ms, stream seq) rows. */
  private static Batch read(ResultSet rs, String topic) throws SQLException {
    List<OutboxRow> rows = new ArrayList<>();
    boolean exists = false;
    while (rs.next()) {
      exists = rs.getObject(1) instanceof Boolean b ? b : rs.getLong(1) > 0;
      if (rs.getObject(2) != null) {
        rows.add(new OutboxRow(
            rs.getLong(2),
            rs.getObject(3, UUID.class),
            topic,
            rs.getString(4),
            rs.getString(5),
            rs.getBytes(6),
            rs.getString(7),
            rs.getObject(8, OffsetDateTime.class).toInstant(),
            new StreamId(rs.getLong(9), rs.getLong(10))));
      }
    }
    return new Batch(exists, rows);
  }

  /**
   * Every statement is the unnamed one ({@link Statements}), planned with its arguments at each execution: a generic
   * plan cached while the outbox had no statistics yet (a fresh deployment, until autovacuum's first ANALYZE) was a
   * sequential scan, kept while the table grew (a relay at 1,000 rows/s fell seconds behind within 15 s), and
   * nothing may outlive the transaction behind a pooler in transaction mode.
   */
  private static PreparedStatement prepare(Connection c, String sql) throws SQLException {
    return Statements.prepare(c, sql);
  }
}
