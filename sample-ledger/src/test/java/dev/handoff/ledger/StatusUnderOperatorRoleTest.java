package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.relay.Relay;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.StreamEntryID;

/** The ledger's status read as the operator role: outbox, leases, streams, groups and the purge lag, exactly. */
@HandoffTest
class StatusUnderOperatorRoleTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  StatusUnderOperatorRoleTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  private LedgerStatus.Snapshot status(DataSource db) {
    return LedgerStatus.collect(db, env.redis(), HostAndPort.from(env.redisUri().getAuthority()),
        DefaultJedisClientConfig.builder().resp2().build(), env.schema(), env.keyPrefix(), Transport.STREAM,
        LedgerConsumer.DEFAULT_GROUP, Duration.ofMillis(1));
  }

  @Test
  void statusReadsEverythingItShowsWithTheOperatorsGrants() throws Exception {
    DatabaseRole operator = env.newRole().grant(Role.OPERATOR)
        // the ledger's own counters are the sample's table, not handoff's: the sample grants them
        .execute("GRANT SELECT ON " + env.schema() + ".consumer_stats TO ROLE");
    DataSource db = operator.newDataSource(2);
    LedgerTestSupport.Run pay = t.cli("pay", "--count", "20");
    assertThat(pay.exit()).as(pay.err()).isZero();

    LedgerStatus.Snapshot waiting = status(db);
    assertThat(waiting.shards().stream().mapToLong(LedgerStatus.Shard::outboxDepth).sum()).isEqualTo(20);
    assertThat(waiting.shards()).allSatisfy(s -> assertThat(s.leaseOwner()).isNull());

    try (Relay relay = t.relay()) {
      relay.relayOnce();
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        env.redis().xgroupCreate(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard),
            LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0), true);
      }
      LedgerStatus.Snapshot published = status(db);
      assertThat(published.shards().stream().mapToLong(LedgerStatus.Shard::outboxDepth).sum()).isZero();
      assertThat(published.shards().stream().mapToLong(LedgerStatus.Shard::streamLength).sum()).isEqualTo(20);
      assertThat(published.shards()).allSatisfy(s -> {
        assertThat(s.leaseOwner()).isEqualTo(relay.config().owner());
        assertThat(s.leaseEpoch()).isEqualTo(1);
        assertThat(s.leaseLive()).isTrue();
      });
      assertThat(published.groups()).hasSize(1);
      assertThat(published.groups().get(0).status().backlog()).isEqualTo(20);
      assertThat(published.groups().get(0).status().deadLetters()).isZero();
      assertThat(published.groups().get(0).countersRecorded()).isFalse();
    }
    ConsumerTestKit.await("the database clock to pass the rows' publication", Duration.ofSeconds(5), () ->
        env.queryLong("SELECT count(*) FROM outbox WHERE published_at > clock_timestamp() - interval '5 ms'") == 0);
    assertThat(status(db).retention().rowsPastRetention()).isEqualTo(20);

    // the status command itself, logged in as the operator
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), "status", "--json", "--transport",
        "stream", "--outbox-retention", "1ms", "--jdbc-url", operator.jdbcUrl(), "--redis-url",
        env.redisUri().toString(), "--schema", env.schema(), "--key-prefix", env.keyPrefix());
    assertThat(exit).as(err.toString()).isZero();
    assertThat(out.toString()).contains("\"rows_past_retention\":20,")
        .contains("\"group\":\"ledger\",\"backlog\":20,\"pending\":0,");
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
