package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The assignment of a busy cycle's batches, for every asked shard in one statement: each shard gets what a statement
 * of its own gave it (its lowest unassigned rows up to its count and the byte limit, consecutive stream IDs above
 * its last, recorded as its pending batch), and nothing at all where its lease is not held or its last batch is still
 * pending.
 */
@HandoffTest
class BatchAssignmentTest {

  private static final String OWNER = "relay-a";

  private final TestEnvironment env;

  BatchAssignmentTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void leases() {
    env.execute("TRUNCATE outbox, relay_lease",
        // payments 0 and 1 have room; payments 2 is held under epoch 2; payments 3 has no rows; orders 0 has a
        // pending batch already; orders 1 is another relay's.
        "INSERT INTO relay_lease (topic, shard, owner, epoch, expires_at, last_ms, last_seq)"
            + " VALUES ('payments', 0, 'relay-a', 1, now() + interval '1 hour', 0, 0),"
            + " ('payments', 1, 'relay-a', 1, now() + interval '1 hour', 9999999999999, 41),"
            + " ('payments', 2, 'relay-a', 2, now() + interval '1 hour', 0, 0),"
            + " ('payments', 3, 'relay-a', 1, now() + interval '1 hour', 0, 0),"
            + " ('orders', 1, 'relay-b', 1, now() + interval '1 hour', 0, 0)",
        "INSERT INTO relay_lease (topic, shard, owner, epoch, expires_at, batch_ids, batch_ms, batch_seq)"
            + " VALUES ('orders', 0, 'relay-a', 1, now() + interval '1 hour', '{999}', 5, 0)",
        // 5 rows per shard except payments 3, 100 bytes of payload each, in id order within each shard.
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " SELECT gen_random_uuid(), t.topic, t.shard, 'payment.created', decode(repeat('ab', 100), 'hex')"
            + " FROM (VALUES ('payments', 0), ('payments', 1), ('payments', 2), ('orders', 0), ('orders', 1))"
            + " AS t(topic, shard), generate_series(1, 5) i ORDER BY i, t.topic, t.shard");
  }

  @Test
  void everyAskedShardGetsItsOwnBatchFromOneStatement() throws SQLException {
    List<BatchAssignment.Request> asked = List.of(
        new BatchAssignment.Request(new ShardId("orders", 0), 1, 10),
        new BatchAssignment.Request(new ShardId("orders", 1), 1, 10),
        new BatchAssignment.Request(new ShardId("payments", 0), 1, 2),
        new BatchAssignment.Request(new ShardId("payments", 1), 1, 10),
        new BatchAssignment.Request(new ShardId("payments", 2), 1, 10),
        new BatchAssignment.Request(new ShardId("payments", 3), 1, 10));
    List<OutboxQueries.Batch> batches;
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(false);
      // 250 bytes: rows that start below it are taken, so 3 rows of 100 bytes where the count allows more.
      batches = RoundTrip.one(c, new BatchAssignment(env.schema()).part(asked, OWNER, 250));
      c.commit();
    }

    assertThat(batches).hasSize(6);
    assertThat(batches.get(0).exists()).as("orders 0: held, its batch still pending").isTrue();
    assertThat(batches.get(0).rows()).isEmpty();
    assertThat(batches.get(1).exists()).as("orders 1: another relay's").isFalse();
    assertThat(batches.get(1).rows()).isEmpty();
    assertThat(batches.get(4).exists()).as("payments 2: held under another epoch").isFalse();
    assertThat(batches.get(5).exists()).as("payments 3: held, no rows").isTrue();
    assertThat(batches.get(5).rows()).isEmpty();

    List<Long> lowestOfShard0 = env.queryList(
        "SELECT id FROM outbox WHERE topic = 'payments' AND shard = 0 ORDER BY id LIMIT 2", Long.class);
    assertThat(batches.get(2).rows()).extracting(OutboxRow::id).containsExactlyElementsOf(lowestOfShard0);
    long ms = batches.get(2).rows().get(0).streamId().ms();
    assertThat(batches.get(2).rows()).extracting(r -> r.streamId().toString())
        .containsExactly(ms + "-0", ms + "-1");
    assertThat(batches.get(2).rows()).allMatch(r -> r.topic().equals("payments") && r.payload().length == 100);

    List<Long> lowestOfShard1 = env.queryList(
        "SELECT id FROM outbox WHERE topic = 'payments' AND shard = 1 ORDER BY id LIMIT 3", Long.class);
    assertThat(batches.get(3).rows()).extracting(OutboxRow::id).containsExactlyElementsOf(lowestOfShard1);
    assertThat(batches.get(3).rows()).extracting(r -> r.streamId().toString())
        .as("above the last ID assigned, in the same millisecond as it").containsExactly(
            "9999999999999-42", "9999999999999-43", "9999999999999-44");

    // The pending batches, recorded in the lease rows; nothing else changed.
    assertThat(env.queryList("SELECT topic || ':' || shard || ' ' || coalesce(batch_ids::text, '-') || ' '"
            + " || last_seq FROM relay_lease ORDER BY topic, shard", String.class))
        .containsExactly(
            "orders:0 {999} 0",
            "orders:1 - 0",
            "payments:0 {" + lowestOfShard0.get(0) + "," + lowestOfShard0.get(1) + "} 1",
            "payments:1 {" + lowestOfShard1.get(0) + "," + lowestOfShard1.get(1) + "," + lowestOfShard1.get(2)
                + "} 44",
            "payments:2 - 0",
            "payments:3 - 0");
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE stream_ms IS NOT NULL OR published_at IS NOT NULL"))
        .as("the rows themselves are not written").isZero();
  }

  @Test
  void theLockStatementLocksOnlyTheOwnersRowsAndCountsThem() throws SQLException {
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(false);
      long locked = RoundTrip.one(c, new BatchAssignment(env.schema()).lockPart(
          List.of(new ShardId("orders", 1), new ShardId("payments", 0), new ShardId("payments", 3)), OWNER));
      c.commit();
      assertThat(locked).isEqualTo(2);
    }
  }
}
