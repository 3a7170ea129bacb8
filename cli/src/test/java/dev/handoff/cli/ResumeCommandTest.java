package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.migrations.HandoffGrants;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code handoff resume} clears the pause a relay recorded in a lease row after a database rewind (DatabaseRewindTest
 * shows the relay stopping and going on), as the operator's role, and says when there was nothing to resume;
 * {@code handoff status} shows the paused shard until then.
 */
@HandoffTest
class ResumeCommandTest {

  private final TestEnvironment env;

  ResumeCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private InProcessRun run(String jdbcUrl, String... args) {
    return runCommand("resume", jdbcUrl, args);
  }

  private InProcessRun status(String jdbcUrl) {
    return runCommand("status", jdbcUrl, "--topic", "orders", "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix());
  }

  private InProcessRun runCommand(String command, String jdbcUrl, String... args) {
    List<String> all = new ArrayList<>(List.of(command));
    all.addAll(List.of(args));
    all.addAll(List.of("--jdbc-url", jdbcUrl, "--schema", env.schema()));
    return InProcessRun.of(all);
  }

  @Test
  void clearsThePausedShardsOfTheTopicAsTheOperatorAndSaysWhenNoneWasPaused() {
    env.execute("INSERT INTO relay_lease (topic, shard, key_prefix, paused_at, paused_reason) VALUES"
        + " ('orders', 0, '" + env.keyPrefix() + "', '2026-12-06T04:00:00Z', 'stream handoff:{orders:0} holds 5"
        + " entries that the relays added and the database does not record (...): the database went back in time,"
        + " as after ...'), ('orders', 1, '" + env.keyPrefix() + "', NULL, NULL),"
        + " ('other', 0, '" + env.keyPrefix() + "', now(), 'x')");

    try (DatabaseRole operator = env.newRole().grant(HandoffGrants.Role.OPERATOR)) {
      InProcessRun paused = status(operator.jdbcUrl());
      assertThat(paused.exit()).as("stderr %s", paused.err()).isZero();
      assertThat(paused.out()).filteredOn(l -> l.contains("PAUSED")).containsExactly("  shard 0 PAUSED since"
          + " 2026-12-06T04:00:00Z: the relay found that the database went back in time; handoff failover-report"
          + " --topic orders shows what it cost, handoff resume --topic orders lets it publish again");

      InProcessRun resumed = run(operator.jdbcUrl(), "--topic", "orders");

      assertThat(resumed.exit()).as("stderr %s", resumed.err()).isZero();
      assertThat(resumed.out()).containsExactly("resumed orders:0, paused since 2026-12-06T04:00:00Z: stream"
          + " handoff:{orders:0} holds 5 entries that the relays added and the database does not record (...): the"
          + " database went back in time");
      assertThat(env.queryLong("SELECT count(*) FROM relay_lease WHERE paused_at IS NOT NULL")).isEqualTo(1);
      assertThat(status(operator.jdbcUrl()).out()).noneMatch(l -> l.contains("PAUSED"));

      InProcessRun again = run(operator.jdbcUrl(), "--topic", "orders", "--shard", "0");
      assertThat(again.exit()).isEqualTo(HandoffCommand.CHECK_FAILED);
      assertThat(again.out()).containsExactly("no shard of topic orders shard 0 was paused");
    }
  }
}
