package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * {@code handoff repair}: what it prints per shard and in all, a dry run that changes nothing, exit 1 for an
 * unrecoverable entry, the one-line refusal of a list topic; and once as a process of its own.
 */
@HandoffTest
class RepairCommandTest {

  private final TestEnvironment env;

  RepairCommandTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aDryRunPrintsWhatTheRepairThenDoesAndTheRelayPublishesTheRowsAgain() throws Exception {
    String topic = "cli-repair";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = relay(topic).build()) {
      append(topic, 30);
      relay.relayOnce();
      env.redis().xgroupCreate(key, "billing", new StreamEntryID(0, 0), false);
      List<String> ids = entryIds(key);
      List<Long> outboxIds = env.queryList("SELECT id FROM outbox WHERE topic = ? ORDER BY id", Long.class, topic);
      for (int i = 10; i < 15; i++) {
        env.redis().xdel(key, new StreamEntryID(ids.get(i)));
      }
      String rows = "SELECT count(*) FROM outbox WHERE topic = ? AND published_at IS NULL";

      HandoffCommandTest.Run dry = HandoffCommandTest.run(args(topic, "--dry-run"));
      assertThat(dry.exit()).as("%s", dry.err()).isZero();
      String reset = " (outbox ids " + String.join(" ", outboxIds.subList(10, 15).stream().map(String::valueOf)
          .toList()) + ")";
      assertThat(dry.out().lines()).containsExactly(
          "shard " + topic + ":0 (" + key + "): 30 published rows checked above 0-0; would reset 5 rows" + reset
              + ", would acknowledge 0 gone pending entries, 0 unrecoverable",
          "dry run of topic " + topic + ": would reset 5 rows for the relay to publish again, would acknowledge 0"
              + " gone pending entries, 0 unrecoverable; nothing changed");
      assertThat(env.queryLong(rows, topic)).isZero();

      HandoffCommandTest.Run real = HandoffCommandTest.run(args(topic));
      assertThat(real.exit()).as("%s", real.err()).isZero();
      assertThat(real.out().lines()).containsExactly(
          "shard " + topic + ":0 (" + key + "): 30 published rows checked above 0-0; reset 5 rows" + reset
              + ", acknowledged 0 gone pending entries, 0 unrecoverable",
          "repair of topic " + topic + ": reset 5 rows for the relay to publish again, acknowledged 0 gone pending"
              + " entries, 0 unrecoverable");
      assertThat(env.queryLong(rows, topic)).isEqualTo(5);
      assertThat(relay.relayOnce().published()).isEqualTo(5);
      assertThat(env.redis().xlen(key)).isEqualTo(30);
    }
  }

  @Test
  void aGonePendingEntryWhoseRowWasPurgedExitsOneAndAListTopicIsRefusedInOneLine() throws Exception {
    String topic = "cli-repair-purged";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = relay(topic).build()) {
      append(topic, 5);
      relay.relayOnce();
    }
    env.redis().xgroupCreate(key, "billing", new StreamEntryID(0, 0), false);
    env.redis().xreadGroup("billing", "died", XReadGroupParams.xReadGroupParams().count(2),
        Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    String first = entryIds(key).get(0);
    env.redis().xdel(key, new StreamEntryID(first));
    env.execute("DELETE FROM outbox WHERE id = (SELECT min(id) FROM outbox WHERE topic = '" + topic + "')");
    HandoffCommandTest.Run r = HandoffCommandTest.run(args(topic));
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out().lines().toList().get(0)).endsWith(", 1 unrecoverable (pending, their outbox rows purged: "
        + first + ")");

    String lists = "cli-repair-list";
    try (Relay relay = relay(lists).listTransport(100).build()) {
      append(lists, 2);
      relay.relayOnce();
    }
    HandoffCommandTest.Run refused = HandoffCommandTest.run(args(lists));
    assertThat(refused.exit()).isEqualTo(2);
    assertThat(refused.err()).singleElement().asString().startsWith("handoff: topic " + lists
        + " is relayed to Redis lists (").contains("repair applies to streams only");
    assertThat(refused.out()).isEmpty();
  }

  @Test
  void asAProcessItPrintsItsSummaryAndExitsZero() throws Exception {
    String topic = "cli-repair-process";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = relay(topic).build()) {
      append(topic, 3);
      relay.relayOnce();
    }
    env.redis().xgroupCreate(key, "billing", new StreamEntryID(0, 0), false);
    env.redis().xdel(key, new StreamEntryID(entryIds(key).get(2)));
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-cp", System.getProperty("java.class.path"), "dev.handoff.cli.HandoffCommand"));
    command.addAll(List.of(args(topic, "--dry-run")));
    Path out = Files.createTempFile("repair", ".out");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(Files.readString(out)).isZero();
    assertThat(Files.readAllLines(out)).contains("dry run of topic " + topic + ": would reset 1 rows for the relay"
        + " to publish again, would acknowledge 0 gone pending entries, 0 unrecoverable; nothing changed");
  }

  private String[] args(String topic, String... more) {
    List<String> a = new ArrayList<>(List.of("repair", "--topic", topic, "--jdbc-url", env.postgres().jdbcUrl(),
        "--schema", env.schema(), "--redis-url", env.redisUri().toString(), "--key-prefix", env.keyPrefix()));
    a.addAll(List.of(more));
    return a.toArray(String[]::new);
  }

  private dev.handoff.relay.RelayBuilder relay(String topic) {
    return Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic));
  }

  private void append(String topic, int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        outbox.append(tx, Message.builder(topic, "order.placed").payload("x" + i).build());
      }
      tx.commit();
    }
  }

  private List<String> entryIds(String key) {
    List<String> out = new ArrayList<>();
    for (Object o : env.redis().xrange(key.getBytes(StandardCharsets.UTF_8), "-".getBytes(StandardCharsets.UTF_8),
        "+".getBytes(StandardCharsets.UTF_8), 1000)) {
      out.add(new String((byte[]) ((List<?>) o).get(0), StandardCharsets.UTF_8));
    }
    return out;
  }
}
