package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.StreamId;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The assignment of a busy cycle's new batches: for every shard asked, in one statement, its lowest unassigned rows
 * recorded as its pending batch with consecutive stream IDs above the last one assigned, fenced by the lease epoch.
 *
 * <p>One statement for all the shards, not one each: every statement of the relay's is the driver's unnamed one,
 * parsed and planned at each execution ({@link dev.handoff.core.internal.Statements}), and planning the assignment
 * cost about as much server time as running it. With a statement per shard a relay spent that cost once per busy
 * shard and cycle, on the cycle's critical path (docs/performance.md).
 */
final class BatchAssignment {

  /** A shard whose next batch is asked for: up to {@code limit} rows. */
  record Request(ShardId shard, long epoch, int limit) {}

  private final String assign;
  private final String lockInOrder;

  BatchAssignment(String schema) {
    String outbox = schema + ".outbox";
    String lease = schema + ".relay_lease";
    // The lease rows are locked in (topic, shard) order, as every statement that locks several of them does, so that
    // two such transactions never deadlock; a takeover waits for this transaction to commit. The rows are not
    // written: the batch lives in the lease row until it is marked. Each shard starts at its lowest unassigned row,
    // and so walks over the index entries of rows published since the last vacuum (cheap once the first scan marked
    // them dead): starting past the last batch instead would skip a row that commits late with a lower id and let its
    // key's later transaction overtake it (RelayExactlyOnceTest has the case).
    this.assign = "WITH w AS (SELECT * FROM unnest(?::text[], ?::int[], ?::bigint[], ?::int[]) WITH ORDINALITY"
        + " AS w(topic, shard, epoch, lim, ord)),"
        + " lease AS (SELECT w.ord, l.topic, l.shard, w.lim, l.last_ms, l.last_seq, l.batch_ids IS NOT NULL AS busy,"
        + " GREATEST(l.last_ms, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS ms"
        + " FROM " + lease + " l JOIN w ON l.topic = w.topic AND l.shard = w.shard AND l.epoch = w.epoch"
        + " WHERE l.owner = ? AND l.expires_at > clock_timestamp()"
        + " ORDER BY l.topic COLLATE \"C\", l.shard FOR UPDATE OF l),"
        + " base AS (SELECT ord, topic, shard, lim, ms, CASE WHEN ms = last_ms THEN last_seq ELSE -1 END AS seq"
        + " FROM lease WHERE NOT busy),"
        + " candidates AS (SELECT b.ord, o.id, o.message_id, o.message_key, o.type, o.payload,"
        + " o.headers::text AS headers, o.created_at,"
        + " sum(octet_length(o.payload)) OVER (PARTITION BY b.ord ORDER BY o.id) - octet_length(o.payload)"
        + " AS bytes_before"
        + " FROM base b CROSS JOIN LATERAL (SELECT * FROM " + outbox + " x WHERE x.topic = b.topic"
        + " AND x.shard = b.shard AND x.published_at IS NULL AND x.stream_ms IS NULL ORDER BY x.id LIMIT b.lim) o),"
        + " picked AS (SELECT *, row_number() OVER (PARTITION BY ord ORDER BY id) AS rn FROM candidates"
        + " WHERE bytes_before < ?),"
        + " batches AS (SELECT ord, count(*) AS n, array_agg(id ORDER BY id) AS ids FROM picked GROUP BY ord),"
        + " moved AS (UPDATE " + lease + " l SET last_ms = b.ms, last_seq = b.seq + p.n, batch_ids = p.ids,"
        + " batch_ms = b.ms, batch_seq = b.seq + 1, updated_at = now()"
        + " FROM base b JOIN batches p ON p.ord = b.ord WHERE l.topic = b.topic AND l.shard = b.shard)"
        + " SELECT w.ord, le.ord IS NOT NULL, p.id, p.message_id, p.message_key, p.type, p.payload, p.headers,"
        + " p.created_at, b.ms, b.seq + p.rn"
        + " FROM w LEFT JOIN lease le ON le.ord = w.ord"
        + " LEFT JOIN (picked p JOIN base b ON b.ord = p.ord) ON p.ord = w.ord"
        + " ORDER BY w.ord, p.id";
    this.lockInOrder = "SELECT count(*) FROM (SELECT 1 FROM " + lease + " l"
        + " JOIN unnest(?::text[], ?::int[]) AS w(topic, shard) ON l.topic = w.topic AND l.shard = w.shard"
        + " WHERE l.owner = ? ORDER BY l.topic COLLATE \"C\", l.shard FOR UPDATE OF l) locked";
  }

  /**
   * The assignment of every request's next batch, as a statement of a {@link RoundTrip}: one
   * {@link OutboxQueries.Batch} per request, in their order, whose {@code exists} is false where the lease no longer
   * holds.
   */
  RoundTrip.Part<List<OutboxQueries.Batch>> part(List<Request> requests, String owner, int maxBytes) {
    int n = requests.size();
    String[] topics = new String[n];
    Integer[] shards = new Integer[n];
    Long[] epochs = new Long[n];
    Integer[] limits = new Integer[n];
    for (int i = 0; i < n; i++) {
      Request r = requests.get(i);
      topics[i] = r.shard().topic();
      shards[i] = r.shard().shard();
      epochs[i] = r.epoch();
      limits[i] = r.limit();
    }
    return new RoundTrip.Part<>(assign, (c, ps, first) -> {
      int i = first;
      ps.setArray(i++, c.createArrayOf("text", topics));
      ps.setArray(i++, c.createArrayOf("int4", shards));
      ps.setArray(i++, c.createArrayOf("int8", epochs));
      ps.setArray(i++, c.createArrayOf("int4", limits));
      ps.setString(i++, owner);
      ps.setLong(i++, maxBytes);
      return i;
    }, rs -> read(rs, requests));
  }

  /**
   * Locks the lease rows of {@code shards} that {@code owner} holds, in (topic, shard) order, as a statement of a
   * {@link RoundTrip}: for a transaction that would otherwise lock some of them out of that order.
   */
  RoundTrip.Part<Long> lockPart(List<ShardId> shards, String owner) {
    String[] topics = shards.stream().map(ShardId::topic).toArray(String[]::new);
    Integer[] numbers = shards.stream().map(ShardId::shard).toArray(Integer[]::new);
    return new RoundTrip.Part<>(lockInOrder, (c, ps, first) -> {
      int i = first;
      ps.setArray(i++, c.createArrayOf("text", topics));
      ps.setArray(i++, c.createArrayOf("int4", numbers));
      ps.setString(i++, owner);
      return i;
    }, rs -> {
      rs.next();
      return rs.getLong(1);
    });
  }

  private static List<OutboxQueries.Batch> read(ResultSet rs, List<Request> requests) throws SQLException {
    List<OutboxQueries.Batch> batches = new ArrayList<>(requests.size());
    List<OutboxRow> rows = new ArrayList<>();
    boolean exists = false;
    int ord = 1;
    while (rs.next()) {
      int rowOrd = rs.getInt(1);
      while (ord < rowOrd) {
        batches.add(new OutboxQueries.Batch(exists, rows));
        rows = new ArrayList<>();
        ord++;
      }
      exists = rs.getBoolean(2);
      if (rs.getObject(3) != null) {
        rows.add(new OutboxRow(rs.getLong(3), rs.getObject(4, UUID.class), requests.get(ord - 1).shard().topic(),
            rs.getString(5), rs.getString(6), rs.getBytes(7), rs.getString(8),
            rs.getObject(9, OffsetDateTime.class).toInstant(), new StreamId(rs.getLong(10), rs.getLong(11))));
      }
    }
    batches.add(new OutboxQueries.Batch(exists, rows));
    if (batches.size() != requests.size()) {
      throw new IllegalStateException("the assignment answered for " + batches.size() + " of " + requests.size()
          + " shards");
    }
    return batches;
  }
}
