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
 * <p>One statement for all the shards, not one each, and a call of a PL/pgSQL function ({@code relay_assign_batches},
 * migration V9) rather than the statement itself: every statement of the relay's is the driver's unnamed one
 * ({@link dev.handoff.core.internal.Statements}), parsed and planned at each execution, and planning the assignment
 * cost about as much server time as running it. A function's plans are kept by the server session that runs it, so
 * the assignment is planned once per session, not once per cycle, nor once per busy shard and cycle as it was with a
 * statement per shard (docs/performance.md).
 */
final class BatchAssignment {

  /** A shard whose next batch is asked for: up to {@code limit} rows. */
  record Request(ShardId shard, long epoch, int limit) {}

  private final String assign;
  private final String lockInOrder;

  BatchAssignment(String schema) {
    String lease = schema + ".relay_lease";
    // The statement is the function of migration V9, which says what it does and why.
    this.assign = "SELECT * FROM " + schema + ".relay_assign_batches(?::text[], ?::int[], ?::bigint[], ?::int[], ?,"
        + " ?::bigint)";
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
