package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.relay.Relay;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;

/**
 * The ledger's status as the operator reads it, with the operator's database role and nothing more: the operator's
 * {@code handoff status} shows the outbox, the leases, the streams and the ledger's group exactly.
 */
@HandoffTest
class StatusUnderOperatorRoleTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  StatusUnderOperatorRoleTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  /** {@code handoff status --json} of the payments topic, logged in as {@code role}. */
  private String status(DatabaseRole role) {
    LedgerTestSupport.Run run = LedgerTestSupport.handoffAs("status", "--topic", PaymentEvents.TOPIC, "--json",
        "--jdbc-url", role.jdbcUrl(), "--schema", env.schema(), "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix());
    assertThat(run.exit()).as(run.err()).isZero();
    return run.out();
  }

  @Test
  void statusReadsEverythingItShowsWithTheOperatorsGrants() throws Exception {
    DatabaseRole operator = env.newRole().grant(Role.OPERATOR);
    DataSource db = operator.newDataSource(2);
    LedgerTestSupport.Run pay = t.cli("pay", "--count", "20");
    assertThat(pay.exit()).as(pay.err()).isZero();

    assertThat(status(operator)).contains("\"topic\":\"payments\"", "\"outboxDepth\":20,", "\"owner\":null,");

    try (Relay relay = t.relay()) {
      relay.relayOnce();
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        env.redis().xgroupCreate(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard),
            LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0), true);
      }
      String published = status(operator);
      assertThat(published).contains("\"outboxDepth\":0,", "\"transports\":[\"stream\"]",
          "\"group\":\"ledger\",\"backlog\":20,\"backlogExact\":true,\"pending\":0,")
          .containsPattern("\"deadLetters\":0,\"streams\"");
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        assertThat(published).contains("{\"shard\":" + shard + ",\"outboxDepth\":0,\"oldestUnpublishedMillis\":null,"
            + "\"lease\":{\"owner\":\"" + relay.config().owner() + "\",\"epoch\":1,");
      }
      assertThat(published.split("\"live\":true", -1)).as("a live lease per shard").hasSize(PaymentEvents.SHARDS + 1);
      long streamLength = 0;
      for (String length : published.split("\"length\":")) {
        if (Character.isDigit(length.charAt(0))) {
          streamLength += Long.parseLong(length.substring(0, length.indexOf(',')));
        }
      }
      assertThat(streamLength).as("stream entries over the shards").isEqualTo(20);
    }
    // what the operator may not do
    for (String refused : new String[] {"SELECT payload FROM outbox", "DELETE FROM outbox",
        "UPDATE relay_lease SET owner = NULL", "SELECT count(*) FROM payment"}) {
      try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
        s.execute(refused);
        throw new AssertionError("the operator could run: " + refused);
      } catch (SQLException e) {
        assertThat(e.getSQLState()).as(refused + ": " + e.getMessage()).isEqualTo("42501");
      }
    }
  }
}
