package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.params.XTrimParams;
import redis.clients.jedis.resps.StreamGroupInfo;

/**
 * {@code handoff rewind} and {@code handoff trim} against real servers: what they print, what they change, and a
 * refused rewind's exit 1 and one line, in process and from a separate JVM.
 */
@HandoffTest
class RewindTrimCommandTest {

  private final TestEnvironment env;

  RewindTrimCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private String key(String topic, int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), topic, shard);
  }

  /** Two shards of entries 1000-0..1009-0, group g having read and acknowledged them all. */
  private void twoShardsReadByG(String topic) {
    for (int shard = 0; shard < 2; shard++) {
      String key = key(topic, shard);
      for (int i = 0; i < 10; i++) {
        env.redis().xadd(key, XAddParams.xAddParams().id((1000 + i) + "-0"), Map.of("f", "v"));
      }
      env.redis().xgroupCreate(key, "g", new StreamEntryID(0, 0), false);
      var read = env.redis().xreadGroup("g", "c", XReadGroupParams.xReadGroupParams().count(100),
          Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      env.redis().xack(key, "g", read.get(0).getValue().stream().map(e -> e.getID()).toArray(StreamEntryID[]::new));
    }
  }

  private String lastDelivered(String topic, int shard) {
    for (StreamGroupInfo g : env.redis().xinfoGroups(key(topic, shard))) {
      if (g.getName().equals("g")) {
        return g.getLastDeliveredId().toString();
      }
    }
    throw new AssertionError("no group g");
  }

  private String[] args(String command, String topic, String... more) {
    List<String> args = new ArrayList<>(List.of(command, "--topic", topic, "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix()));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  @Test
  void rewindSaysPerShardWhatComesAgainAndADryRunChangesNothing() {
    twoShardsReadByG("cli-rewind");

    HandoffCommandTest.Run dry = HandoffCommandTest.run(args("rewind", "cli-rewind", "--group", "g", "--to",
        "1970-01-01T00:00:01.004Z", "--dry-run", "--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));

    assertThat(dry.exit()).as("stderr %s", dry.err()).isZero();
    assertThat(dry.out().lines().toList()).containsExactly(
        "shard 0: 6 from 1009-0 back to 1003-" + Long.MAX_VALUE,
        "shard 1: 6 from 1009-0 back to 1003-" + Long.MAX_VALUE,
        "rewind of group 'g' on topic 'cli-rewind' to 1970-01-01T00:00:01.004Z (dry run): 12 entries would come"
            + " again (shard 0: 6 from 1009-0 back to 1003-" + Long.MAX_VALUE + "; shard 1: 6 from 1009-0 back to"
            + " 1003-" + Long.MAX_VALUE + "); 0 pending entries stay pending");
    assertThat(lastDelivered("cli-rewind", 0)).isEqualTo("1009-0");

    HandoffCommandTest.Run one = HandoffCommandTest.run(args("rewind", "cli-rewind", "--group", "g", "--to",
        "1008-0", "--shard", "1"));

    assertThat(one.exit()).as("stderr %s", one.err()).isZero();
    assertThat(one.out()).contains("2 entries will come again");
    assertThat(lastDelivered("cli-rewind", 0)).isEqualTo("1009-0");
    assertThat(lastDelivered("cli-rewind", 1)).isEqualTo("1007-" + Long.MAX_VALUE);
  }

  @Test
  void aRewindBelowRetentionExitsOneWithOneLineNamingTheShardAndTheOldestEntry() throws Exception {
    twoShardsReadByG("cli-below");
    env.redis().xtrim(key("cli-below", 1), XTrimParams.xTrimParams().minId("1004-0").exactTrimming());
    String expected = "shard 1 (" + key("cli-below", 1) + ") retains entries from 1004-0 on";

    HandoffCommandTest.Run r = HandoffCommandTest.run(args("rewind", "cli-below", "--group", "g", "--to", "1002"));

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).singleElement().asString().startsWith("handoff: rewind of group 'g'").contains(expected,
        "HandoffConsumer.replayFromOutbox");
    assertThat(r.out()).isEmpty();
    assertThat(lastDelivered("cli-below", 0)).isEqualTo("1009-0");

    // the same from a separate JVM, as an operator runs it
    Path err = Files.createTempFile("rewind", ".err");
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), "dev.handoff.cli.HandoffCommand"));
    command.addAll(List.of(args("rewind", "cli-below", "--group", "g", "--to", "1002")));
    Process p = new ProcessBuilder(command).redirectError(err.toFile())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(1);
    assertThat(Files.readAllLines(err)).singleElement().asString().contains(expected, "replayFromOutbox");
    assertThat(lastDelivered("cli-below", 1)).isEqualTo("1009-0");

    HandoffCommandTest.Run noGroup = HandoffCommandTest.run(args("rewind", "cli-below", "--group", "nobody",
        "--to", "1005"));
    assertThat(noGroup.exit()).isEqualTo(1);
    assertThat(noGroup.err()).singleElement().asString().contains("group 'nobody' does not exist on shard 0");
    HandoffCommandTest.Run badTarget = HandoffCommandTest.run(args("rewind", "cli-below", "--group", "g",
        "--to", "yesterday"));
    assertThat(badTarget.exit()).isEqualTo(2);
    assertThat(badTarget.err()).singleElement().asString().contains("--to: rewind target 'yesterday'");
  }

  @Test
  void trimShowsWhatEachGroupHoldsAndRemovesWhatAllFinished() {
    twoShardsReadByG("cli-trim");
    String key0 = key("cli-trim", 0);
    env.redis().xgroupCreate(key0, "slow", new StreamEntryID(1005, 0), false);

    HandoffCommandTest.Run dry = HandoffCommandTest.run(args("trim", "cli-trim", "--dry-run"));

    assertThat(dry.exit()).as("stderr %s", dry.err()).isZero();
    assertThat(dry.out().lines().toList()).containsExactly(
        "shard 0: 5 of 10 below 1005-0 (held by slow)",
        "  g: last delivered 1009-0, backlog 0, pending 0",
        "  slow: last delivered 1005-0, backlog 4, pending 0",
        "shard 1: 9 of 10 below 1009-0 (held by g)",
        "  g: last delivered 1009-0, backlog 0, pending 0",
        "trim of topic 'cli-trim' (dry run): 14 entries would be removed on 2 shard(s)");
    assertThat(env.redis().xlen(key0)).isEqualTo(10);

    HandoffCommandTest.Run trim = HandoffCommandTest.run(args("trim", "cli-trim"));

    assertThat(trim.exit()).as("stderr %s", trim.err()).isZero();
    assertThat(trim.out()).endsWith("trim of topic 'cli-trim': 14 entries removed on 2 shard(s)"
        + System.lineSeparator());
    assertThat(env.redis().xlen(key0)).isEqualTo(5);
    assertThat(env.redis().xlen(key("cli-trim", 1))).isEqualTo(1);
    assertThat(lastDelivered("cli-trim", 0)).isEqualTo("1009-0");
  }
}
