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
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code handoff replay}: the command runs no handler; the replay it requests is run once by the group's consumer,
 * each published message of the range is handled once, and the stream gains no entry.
 */
@HandoffTest
class ReplayCommandTest {

  private final TestEnvironment env;

  ReplayCommandTest(TestEnvironment env) {
    this.env = env;
    env.execute("CREATE TABLE IF NOT EXISTS " + env.schema() + ".replayed (id bigserial PRIMARY KEY,"
        + " message_id uuid NOT NULL)");
  }

  private record Run(int exit, String out, List<String> err) {}

  private Run run(String... args) {
    List<String> all = new ArrayList<>(List.of("replay"));
    all.addAll(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(all.toArray(String[]::new));
    return new Run(exit, out.toString(), err.toString().lines().toList());
  }

  @Test
  void aRequestedReplayIsRunOnceByTheGroupsConsumerAndWritesNothingToRedis() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("audit")).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        outbox.append(tx, Message.builder("audit", "entry").key("k" + i).payload("p" + i).build());
      }
      tx.commit();
    }
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("audit")).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(5); // a replay runs what was published
    }
    String key = StreamFormat.streamKey(env.keyPrefix(), "audit", 0);

    Run requested = run("--group", "auditors", "--topic", "audit", "--since", "1h");
    assertThat(requested.exit()).as("stderr %s", requested.err()).isZero();
    assertThat(requested.out()).startsWith("requested replay ").contains(" of topic audit for group auditors, rows"
        + " appended since ");
    long id = Long.parseLong(requested.out().split(" ")[2]);

    Run open = run("--id", Long.toString(id));
    assertThat(open.exit()).isEqualTo(HandoffCommand.CHECK_FAILED);
    assertThat(open.out()).startsWith("replay " + id + " of topic audit for group auditors").contains(": not run yet");

    try (StreamConsumer consumer = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
        .keyPrefix(env.keyPrefix()).topic(TopicConfig.of("audit")).group("auditors")
        .handler((tx, m) -> {
          try (PreparedStatement ps = tx.prepareStatement("INSERT INTO replayed (message_id) VALUES (?)")) {
            ps.setObject(1, m.messageId());
            ps.executeUpdate();
          }
        }).build()) {
      assertThat(consumer.maintainOnce()).isEqualTo(1);
      assertThat(consumer.maintainOnce()).as("once").isZero();
    }

    Run done = run("--id", Long.toString(id));
    assertThat(done.exit()).isZero();
    assertThat(done.out()).contains(": ran at ", ", 5 handled, 0 already processed, 0 failed");
    assertThat(env.queryLong("SELECT count(*) FROM replayed")).isEqualTo(5);
    assertThat(env.queryLong("SELECT count(DISTINCT message_id) FROM replayed")).isEqualTo(5);
    assertThat(env.redis().xlen(key)).as("nothing written to the stream").isEqualTo(5);
  }

  @Test
  void allGroupsRequestsOneReplayPerGroupOfTheTopic() throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("orders")).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.append(tx, Message.builder("orders", "order.placed").key("o1").payload("p").build());
      tx.commit();
    }
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("orders")).build()) {
      relay.relayOnce();
    }
    for (String group : List.of("shipping", "billing")) {
      try (StreamConsumer c = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
          .keyPrefix(env.keyPrefix()).topic(TopicConfig.of("orders")).group(group).handler((tx, m) -> { })
          .build()) {
        c.pollOnce(); // the group exists in Redis
      }
    }

    Run r = run("--all-groups", "--topic", "orders", "--since", "1h", "--redis-url", env.redisUri().toString(),
        "--key-prefix", env.keyPrefix());

    assertThat(r.exit()).as("stderr %s", r.err()).isZero();
    assertThat(r.out().lines().toList()).hasSize(2).satisfiesExactly(
        l -> assertThat(l).startsWith("requested replay ").contains(" of topic orders for group billing, "),
        l -> assertThat(l).startsWith("requested replay ").contains(" of topic orders for group shipping, "));
    assertThat(env.queryList("SELECT consumer_group FROM replay_request WHERE topic = 'orders' ORDER BY 1",
        String.class)).containsExactly("billing", "shipping");
  }

  @Test
  void aRequestWithoutItsRangeIsAOneLineUsageError() {
    Run r = run("--group", "auditors", "--topic", "audit");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).singleElement().asString().isEqualTo("handoff: --group (or --all-groups), --topic and"
        + " --since are required (or --id to show a request) (see handoff replay --help)");
    Run both = run("--group", "auditors", "--all-groups", "--topic", "audit", "--since", "1h");
    assertThat(both.exit()).isEqualTo(2);
    assertThat(both.err()).singleElement().asString().startsWith("handoff: --group (or --all-groups)");
  }
}
