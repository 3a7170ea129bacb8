package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code handoff failover-report}, in-process, on the state a failover to a standby that lacked the last commits
 * leaves (made directly in the database): three published messages whose outbox rows are gone (ghosts), and two whose
 * record of publication is gone, so that the relay published them again. DatabaseFailoverTest reads the same report
 * after a real failover.
 */
@HandoffTest
class FailoverReportCommandTest {

  private final TestEnvironment env;

  FailoverReportCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private InProcessRun run(String jdbcUrl, String... args) {
    List<String> all = new ArrayList<>(List.of("failover-report"));
    all.addAll(List.of(args));
    all.addAll(List.of("--jdbc-url", jdbcUrl, "--schema", env.schema(), "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix()));
    return InProcessRun.of(all);
  }

  private List<AppendedMessage> publish(String topic, int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(topic)).build();
    List<AppendedMessage> out = new ArrayList<>();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        out.add(outbox.append(tx, Message.builder(topic, "entry").key("k" + i).payload("p" + i).build()));
      }
      tx.commit();
    }
    relayAll(topic);
    return out;
  }

  private void relayAll(String topic) {
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic)).build()) {
      while (relay.relayOnce().published() > 0) {
        // until everything is published
      }
    }
  }

  @Test
  void listsTheGhostsAndTheMessagesPublishedTwiceAndFailsTheCheck() throws Exception {
    List<AppendedMessage> m = publish("ledger", 10);
    env.execute("DELETE FROM outbox WHERE id IN (" + m.get(0).outboxId() + ", " + m.get(1).outboxId() + ", "
        + m.get(2).outboxId() + ")");
    env.execute("UPDATE outbox SET published_at = NULL, stream_ms = NULL, stream_seq = NULL WHERE id IN ("
        + m.get(3).outboxId() + ", " + m.get(4).outboxId() + ")");
    relayAll("ledger");
    String key = StreamFormat.streamKey(env.keyPrefix(), "ledger", 0);
    assertThat(env.redis().xlen(key)).isEqualTo(12);

    InProcessRun all = run(env.postgres().jdbcUrl(), "--topic", "ledger");

    assertThat(all.exit()).as("stderr %s", all.err()).isEqualTo(HandoffCommand.CHECK_FAILED);
    assertThat(all.out()).containsExactly(
        "topic ledger: 1 stream(s), 12 entries read: 3 ghost(s), 2 message(s) published twice",
        "  " + key + " (shard 0): 12 entries, 3 ghost(s), 2 published twice",
        "    ghosts: " + m.get(0).messageId() + " " + m.get(1).messageId() + " " + m.get(2).messageId(),
        "    published twice: " + m.get(3).messageId() + " " + m.get(4).messageId(),
        "ghosts were never committed by this database: a consumer that shares it and refuses ghosts dead-lettered"
            + " them; any other may have applied them (docs/guarantees.md#a-database-failover)");

    InProcessRun one = run(env.postgres().jdbcUrl(), "--topic", "ledger", "--list", "1", "--json");
    assertThat(one.exit()).isEqualTo(HandoffCommand.CHECK_FAILED);
    assertThat(one.out()).singleElement().asString().contains("\"clean\":false", "\"ghosts\":3",
        "\"ghostIds\":[\"" + m.get(0).messageId() + "\"]", "\"publishedTwice\":2");

    // The operator's role has exactly what the report reads.
    try (DatabaseRole operator = env.newRole().grant(HandoffGrants.Role.OPERATOR)) {
      InProcessRun asOperator = run(operator.jdbcUrl(), "--topic", "ledger");
      assertThat(asOperator.err()).isEmpty();
      assertThat(asOperator.out()).isEqualTo(all.out());
    }
  }

  @Test
  void aStreamWithNeitherPassesTheCheck() throws Exception {
    publish("clean", 5);

    InProcessRun r = run(env.postgres().jdbcUrl(), "--topic", "clean");

    assertThat(r.exit()).isZero();
    assertThat(r.out()).containsExactly("topic clean: 1 stream(s), 5 entries read: 0 ghost(s), 0 message(s)"
        + " published twice", "  " + StreamFormat.streamKey(env.keyPrefix(), "clean", 0) + " (shard 0): 5 entries,"
        + " 0 ghost(s), 0 published twice");
  }
}
