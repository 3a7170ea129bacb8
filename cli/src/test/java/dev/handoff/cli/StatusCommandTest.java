package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/** {@code handoff.jar status} on a topic and group of the user's own, as a process, with exact numbers. */
@HandoffTest
class StatusCommandTest {

  private static final TopicConfig ORDERS = TopicConfig.of("orders").withShards(2);

  private final TestEnvironment env;

  StatusCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private void append(int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(ORDERS).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        outbox.append(tx, Message.builder("orders", "order.placed").key("order-" + i).payload("p" + i).build());
      }
      tx.commit();
    }
  }

  private record Output(int exit, String out, String err) {}

  private Output status(String... more) throws Exception {
    List<String> args = new ArrayList<>(List.of("status", "--jdbc-url", env.postgres().jdbcUrl(), "--schema",
        env.schema(), "--redis-url", env.redisUri().toString(), "--key-prefix", env.keyPrefix()));
    args.addAll(List.of(more));
    Process p = HandoffProcess.builder(args.toArray(String[]::new)).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Output(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8),
        new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
  }

  @Test
  void jsonStatusOfAUsersOwnTopicAndGroupHasExactDepthBacklogAndPending() throws Exception {
    append(20);
    int handled;
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(ORDERS).build();
        StreamConsumer billing = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic(ORDERS).group("billing").batchSize(3).handler((tx, m) -> { })
            .build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(20);
      handled = billing.pollOnce().handled();
    }
    assertThat(handled).isBetween(1, 3);
    append(5);
    // One entry of each shard handed to a consumer that never acknowledges: pending, not backlog.
    for (int shard = 0; shard < 2; shard++) {
      assertThat(env.redis().xreadGroup("billing", "stuck", XReadGroupParams.xReadGroupParams().count(1),
          Map.of(StreamFormat.streamKey(env.keyPrefix(), "orders", shard), StreamEntryID.UNRECEIVED_ENTRY)))
          .singleElement().satisfies(e -> assertThat(e.getValue()).hasSize(1));
    }

    Output r = status("--topic", "orders", "--group", "billing", "--json");
    assertThat(r.exit()).as("stderr %s", r.err()).isZero();
    assertThat(r.out().lines().toList()).hasSize(1);
    String json = r.out();
    assertThat(json).startsWith("{\"topics\":[{\"topic\":\"orders\",").contains("\"transports\":[\"stream\"]")
        .contains("\"outboxDepth\":5,")
        .contains("\"group\":\"billing\",\"backlog\":" + (20 - handled - 2) + ",\"backlogExact\":true,\"pending\":2,")
        .contains("\"consumers\":{\"stuck\":1}");
    assertThat(json.split("\"lease\":\\{", -1)).as("a lease per shard").hasSize(3);

    Output text = status();
    assertThat(text.exit()).as("stderr %s", text.err()).isZero();
    assertThat(text.out()).contains("topic orders: 2 shards, [stream], outbox depth 5")
        .contains("group billing: backlog " + (20 - handled - 2) + " (never delivered), pending 2 (delivered, not"
            + " acknowledged)");
  }

  @Test
  void watchRedrawsTheReportUntilSigtermAndExitsZero() throws Exception {
    // A topic of its own: the tests of this class share the schema.
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 3; i++) {
        outbox.append(tx, Message.builder("watched", "order.placed").payload("p" + i).build());
      }
      tx.commit();
    }
    java.io.File out = java.nio.file.Files.createTempFile("status-watch", ".out").toFile();
    Process p = HandoffProcess.builder("status", "--watch", "--interval", "100ms", "--jdbc-url",
        env.postgres().jdbcUrl(), "--schema", env.schema(), "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix(), "--topic", "watched").redirectOutput(out).start();
    try {
      org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
          java.nio.file.Files.readString(out.toPath()).split("\033\\[H\033\\[2J", -1).length > 3);
      String frames = java.nio.file.Files.readString(out.toPath());
      assertThat(frames).contains("topic watched: 1 shard, nothing published yet, outbox depth 3");
      p.destroy();
      assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isZero();
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void anUnmigratedSchemaIsOneLineWithExitTwo() throws Exception {
    Process p = HandoffProcess.builder("status", "--jdbc-url", env.postgres().jdbcUrl(), "--schema", "nothing_here",
        "--redis-url", env.redisUri().toString()).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList())
        .containsExactly("handoff: schema 'nothing_here' has no table 'outbox': apply handoff's migrations first"
            + " (handoff migrate, or relay --migrate), or pass the right --schema");
  }
}
