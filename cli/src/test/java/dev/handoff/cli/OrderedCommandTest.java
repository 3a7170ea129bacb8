package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.params.XAddParams;

/**
 * {@code handoff status} shows each shard of an ordered group (owner, epoch, position, what holds it up), and
 * {@code handoff ordered resume} records the operator's answer to a stopped shard, as the operator's role, for its
 * owner to carry out (OrderedProcessingTest shows the owner doing it); a shard that is not stopped is left alone.
 */
@HandoffTest
class OrderedCommandTest {

  private final TestEnvironment env;

  OrderedCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private InProcessRun run(String jdbcUrl, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", jdbcUrl, "--schema", env.schema()));
    return InProcessRun.of(all);
  }

  @Test
  void statusShowsTheOrderedShardsAndResumeAnswersOnlyAStoppedOne() {
    env.execute("INSERT INTO topic (name, shards) VALUES ('orders', 2)");
    for (int shard = 0; shard < 2; shard++) {
      String key = StreamFormat.streamKey(env.keyPrefix(), "orders", shard);
      env.redis().xadd(key, XAddParams.xAddParams().id("1-1"), java.util.Map.of("f", "v"));
      env.redis().xgroupCreate(key, "billing", null, false);
    }
    env.execute("INSERT INTO consumer_lease (consumer_group, topic, shard, owner, epoch, expires_at, position)"
        + " VALUES ('billing', 'orders', 0, 'host-a', 3, now() + interval '1 hour', '1000-40')");
    env.execute("INSERT INTO consumer_lease (consumer_group, topic, shard, owner, epoch, expires_at, position,"
        + " blocked_stream_id, blocked_message_id, blocked_since, blocked_deliveries, blocked_error, stopped_at)"
        + " VALUES ('billing', 'orders', 1, 'host-b', 5, now() + interval '1 hour', '1001-7', '1001-8',"
        + " '6f1c1a6e-1c51-4f1e-9d0e-2a4f5b6c7d8e', '2026-12-06T04:00:00Z', 10, 'boom', '2026-12-06T04:05:00Z')");

    try (DatabaseRole operator = env.newRole().grant(HandoffGrants.Role.OPERATOR)) {
      InProcessRun status = run(operator.jdbcUrl(), "status", "--topic", "orders", "--redis-url",
          env.redisUri().toString(), "--key-prefix", env.keyPrefix());
      assertThat(status.exit()).as("stderr %s", status.err()).isZero();
      assertThat(status.out()).filteredOn(l -> l.contains("ordered shard")).containsExactly(
          "    ordered shard 0: owner host-a, epoch 3, position 1000-40",
          "    ordered shard 1: owner host-b, epoch 5, position 1001-7, STOPPED since 2026-12-06T04:05:00Z behind"
              + " entry 1001-8 (message 6f1c1a6e-1c51-4f1e-9d0e-2a4f5b6c7d8e, 10 deliveries); handoff ordered"
              + " resume --group billing --topic orders --shard 1 [--skip]");

      InProcessRun notStopped = run(operator.jdbcUrl(), "ordered", "resume", "--group", "billing", "--topic",
          "orders", "--shard", "0");
      assertThat(notStopped.exit()).isEqualTo(HandoffCommand.CHECK_FAILED);
      assertThat(notStopped.out()).containsExactly("shard 0 of topic orders for group billing is not stopped");

      InProcessRun skip = run(operator.jdbcUrl(), "ordered", "resume", "--group", "billing", "--topic", "orders",
          "--shard", "1", "--skip");
      assertThat(skip.exit()).as("stderr %s", skip.err()).isZero();
      assertThat(skip.out()).containsExactly("shard 1 of topic orders for group billing: skip requested; its owner"
          + " carries it out within about a second (handoff status shows it)");
    }
    assertThat(env.queryList("SELECT coalesce(resume_requested, '-') FROM consumer_lease ORDER BY shard",
        String.class)).containsExactly("-", "skip");
  }
}
