package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.StreamId;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The marks of several shards' batches in one statement: each shard's rows get their stream IDs and
 * {@code published_at}, its lease row its count of added entries and an empty pending batch, as a mark of its own
 * did; a shard whose lease is not held under the epoch given is left exactly as it was, and says so.
 */
@HandoffTest
class MarkAllTest {

  private final TestEnvironment env;

  MarkAllTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void batches() {
    env.execute("TRUNCATE outbox, relay_lease",
        "INSERT INTO outbox (message_id, topic, shard, type, payload)"
            + " SELECT gen_random_uuid(), 'payments', s, 'payment.created', '\\x00'"
            + " FROM generate_series(1, 3) i, generate_series(0, 2) s ORDER BY i, s",
        // Each shard's three rows are its pending batch; payments 1 is held under epoch 7, not the epoch its mark says.
        "INSERT INTO relay_lease (topic, shard, owner, epoch, expires_at, entries_added, batch_ids, batch_ms,"
            + " batch_seq) SELECT 'payments', s, 'relay-a', CASE WHEN s = 1 THEN 7 ELSE 1 END,"
            + " now() + interval '1 hour', 10, (SELECT array_agg(id ORDER BY id) FROM outbox WHERE shard = s), 5, 0"
            + " FROM generate_series(0, 2) s");
  }

  @Test
  void eachShardIsMarkedAsByAStatementOfItsOwnAndALostLeaseChangesNothing() throws SQLException {
    List<OutboxQueries.MarkRequest> requests = List.of(request(0, 13), request(1, 13), request(2, 4));
    List<OutboxQueries.Mark> marks;
    try (Connection c = env.dataSource().getConnection()) {
      c.setAutoCommit(false);
      marks = RoundTrip.one(c, new OutboxQueries(env.schema()).markAllPart(requests, "relay-a"));
      c.commit();
    }

    assertThat(marks).containsExactly(
        new OutboxQueries.Mark(3, 10), new OutboxQueries.Mark(-1, -1), new OutboxQueries.Mark(3, 10));
    assertThat(env.queryList("SELECT shard || ':' || count(*) FILTER (WHERE published_at IS NOT NULL) || ':'"
            + " || coalesce(string_agg(stream_ms || '-' || stream_seq, ',' ORDER BY id), '')"
            + " FROM outbox GROUP BY shard ORDER BY shard",
        String.class)).containsExactly("0:3:5-0,5-1,5-2", "1:0:", "2:3:5-0,5-1,5-2");
    assertThat(env.queryList("SELECT shard || ':' || entries_added || ':' || (batch_ids IS NULL) FROM relay_lease"
        + " ORDER BY shard", String.class))
        .as("the count only ever rises, and the batch is cleared only where the lease held")
        .containsExactly("0:13:true", "1:10:false", "2:10:true");
  }

  private OutboxQueries.MarkRequest request(int shard, long entriesAdded) {
    List<Long> ids = env.queryList("SELECT id FROM outbox WHERE shard = ? ORDER BY id", Long.class, shard);
    List<OutboxRow> rows = new ArrayList<>();
    for (int i = 0; i < ids.size(); i++) {
      rows.add(new OutboxRow(ids.get(i), UUID.randomUUID(), "payments", null, "payment.created", new byte[1], "{}",
          Instant.now(), new StreamId(5, i)));
    }
    return new OutboxQueries.MarkRequest(new ShardId("payments", shard), 1, rows, entriesAdded, true);
  }
}
