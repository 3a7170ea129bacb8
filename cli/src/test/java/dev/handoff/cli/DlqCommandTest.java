package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import redis.clients.jedis.params.XAddParams;

/**
 * {@code handoff dlq}: the command runs no handler; a retry it requests is run once by the group's running consumer,
 * and no stream gains an entry.
 */
@HandoffTest
class DlqCommandTest {

  private static final AtomicLong OUTBOX_IDS = new AtomicLong(1);

  private final TestEnvironment env;
  private final Set<UUID> failing = ConcurrentHashMap.newKeySet();
  private final Map<UUID, AtomicInteger> attempts = new ConcurrentHashMap<>();

  DlqCommandTest(TestEnvironment env) {
    this.env = env;
    env.execute("CREATE TABLE IF NOT EXISTS " + env.schema() + ".effect (id bigserial PRIMARY KEY,"
        + " message_id uuid NOT NULL)");
  }

  private record Run(int exit, String out, List<String> err) {}

  /** Runs a dlq command line against the test's database. */
  private Run run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));
    return runAsGiven(all.toArray(String[]::new));
  }

  private static Run runAsGiven(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args);
    return new Run(exit, out.toString(), err.toString().lines().toList());
  }

  private String key(String topic) {
    return StreamFormat.streamKey(env.keyPrefix(), topic, 0);
  }

  private UUID publish(String topic) {
    StreamMessage m = new StreamMessage(UUID.randomUUID(), OUTBOX_IDS.getAndIncrement(), topic, "payment.captured",
        "k", Map.of(), Instant.now().truncatedTo(ChronoUnit.MILLIS), "{}".getBytes(StandardCharsets.UTF_8));
    env.redis().xadd(key(topic).getBytes(StandardCharsets.UTF_8), XAddParams.xAddParams(), StreamFormat.encode(m));
    return m.messageId();
  }

  private StreamConsumer consumer(String topic, String group) {
    MessageHandler handler = (tx, m) -> {
      attempts.computeIfAbsent(m.messageId(), id -> new AtomicInteger()).incrementAndGet();
      if (failing.contains(m.messageId())) {
        throw new IllegalStateException("card declined for " + m.messageId());
      }
      try (PreparedStatement ps = tx.prepareStatement("INSERT INTO effect (message_id) VALUES (?)")) {
        ps.setObject(1, m.messageId());
        ps.executeUpdate();
      }
    };
    return StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(topic).group(group).handler(handler).maxDeliveries(1).block(Duration.ofMillis(100))
        .retryRequestInterval(Duration.ofMillis(50)).build();
  }

  private DeadLetterAdmin admin() {
    return DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build();
  }

  private long effects(UUID id) {
    return env.queryLong("SELECT count(*) FROM effect WHERE message_id = ?", id);
  }

  @Test
  void retryFromAProcessWhileTheConsumerRunsIsHandledOnceAndTheStreamGainsNoEntry() throws Exception {
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(publish("payments"));
    }
    UUID poison = ids.get(3);
    failing.add(poison);
    try (StreamConsumer consumer = consumer("payments", "billing")) {
      consumer.start();
      ConsumerTestKit.await("the poison message is dead-lettered", Duration.ofSeconds(20),
          () -> consumer.status().deadLetters() == 1);
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));
      long length = env.redis().xlen(key("payments"));
      long id = admin().list("billing", DeadLetterSelection.all(), 10).get(0).id();
      failing.clear();

      Path out = Files.createTempFile("dlq-retry", ".out");
      List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
          .toString(), "-cp", System.getProperty("java.class.path"), "dev.handoff.cli.HandoffCommand", "dlq", "retry",
          "--group", "billing", "--id", Long.toString(id), "--jdbc-url", env.postgres().jdbcUrl(), "--schema",
          env.schema()));
      Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(Files.readString(out)).isZero();
      assertThat(Files.readAllLines(out)).containsExactly(
          "requested retry of 1 dead letter of group billing (the running consumers pick it up)");

      await().atMost(Duration.ofSeconds(20))
          .until(() -> admin().show(id).orElseThrow().state() == DeadLetter.State.RETRIED);
      assertThat(attempts.get(poison)).hasValue(2);
      assertThat(effects(poison)).isEqualTo(1);
      // The class's other tests write effects of their own topic to the same table.
      assertThat(env.queryLong("SELECT count(*) FROM effect WHERE message_id = ANY (?)",
          (Object) ids.toArray(UUID[]::new))).isEqualTo(5);
      assertThat(env.redis().xlen(key("payments"))).isEqualTo(length).isEqualTo(5);
      assertThat(consumer.status().deadLetters()).isZero();
    }
  }

  @Test
  void listShowRetryAndPurgeInProcess() {
    UUID first = publish("refunds");
    UUID second = publish("refunds");
    failing.add(first);
    failing.add(second);
    long firstId;
    long secondId;
    try (StreamConsumer consumer = consumer("refunds", "ledger")) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(20));
      List<DeadLetter> dead = admin().list("ledger", DeadLetterSelection.all(), 10);
      secondId = dead.get(0).id();
      firstId = dead.get(1).id();

      Run requested = run("dlq", "retry", "--group", "ledger", "--since", "2h");
      assertThat(requested.exit()).as("%s", requested.err()).isZero();
      assertThat(requested.out()).isEqualTo("requested retry of 2 dead letters of group ledger (the running"
          + " consumers pick them up)" + System.lineSeparator());
      failing.remove(second);
      assertThat(consumer.maintainOnce()).isEqualTo(2);
    }
    Run list = run("dlq", "list", "--group", "ledger");
    assertThat(list.exit()).as("%s", list.err()).isZero();
    List<String> lines = list.out().lines().toList();
    assertThat(lines).hasSize(4);
    assertThat(lines.get(0)).startsWith("ID").contains("GROUP", "STATE", "DEAD AT", "ERROR");
    assertThat(lines.get(1)).startsWith(secondId + " ").contains("ledger", "retried", "payment.captured");
    assertThat(lines.get(2)).startsWith(firstId + " ").contains("retry-failed",
        "java.lang.IllegalStateException: card declined for " + first);
    assertThat(lines.get(3)).isEqualTo("2 dead letters of group ledger: 1 retried, 1 retry-failed");

    Run json = run("dlq", "list", "--group", "ledger", "--json", "--limit", "1");
    assertThat(json.exit()).isZero();
    assertThat(json.out().strip()).startsWith("[{\"id\":" + secondId + ",\"group\":\"ledger\",\"state\":\"retried\","
        + "\"message_id\":\"" + second + "\"").endsWith("}]").doesNotContain("\n");

    Run show = run("dlq", "show", "--id", Long.toString(firstId));
    assertThat(show.exit()).isZero();
    assertThat(show.out().lines().toList()).first().isEqualTo("dead letter " + firstId + " of group ledger:"
        + " retry-failed");
    assertThat(show.out()).contains("  message       " + first, "  retry error   java.lang.IllegalStateException");
    Run showJson = run("dlq", "show", "--id", Long.toString(firstId), "--json");
    assertThat(showJson.out()).contains("\"state\":\"retry-failed\"", "\"retryable\":true",
        "\"retry_error\":\"java.lang.IllegalStateException: card declined for " + first);

    Run purged = run("dlq", "purge", "--group", "ledger", "--id", Long.toString(firstId));
    assertThat(purged.out().strip()).isEqualTo("purged 1 dead letter of group ledger (their inbox markers stay dead:"
        + " a redelivery or replay runs no handler)");
    assertThat(run("dlq", "purge", "--group", "ledger", "--all").out()).startsWith("purged 1 dead letter of");
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'dead'"))
        .isEqualTo(1);
    assertThat(run("dlq", "list", "--group", "ledger").out().strip()).isEqualTo("0 dead letters of group ledger");
  }

  @Test
  void usageErrorsAreOneLineWithExitTwo() {
    Run none = run("dlq", "retry", "--group", "g");
    assertThat(none.exit()).isEqualTo(2);
    assertThat(none.err()).containsExactly("handoff: exactly one of --id, --all, --since is required (see handoff"
        + " dlq retry --help)");
    Run two = run("dlq", "purge", "--id", "3", "--all");
    assertThat(two.exit()).isEqualTo(2);
    assertThat(two.err()).singleElement().asString().startsWith("handoff: exactly one of --id, --all, --since");
    Run badSince = run("dlq", "list", "--since", "yesterday");
    assertThat(badSince.exit()).isEqualTo(2);
    assertThat(badSince.err()).singleElement().asString().contains("'yesterday' is neither an instant");
    Run missing = run("dlq", "retry", "--id", "999999");
    assertThat(missing.exit()).isEqualTo(2);
    assertThat(missing.err()).containsExactly("handoff: no dead letter 999999");
    Run noCommand = runAsGiven("dlq");
    assertThat(noCommand.exit()).isEqualTo(2);
    assertThat(noCommand.err()).singleElement().asString()
        .startsWith("handoff: a dlq command is required: list, show, retry, purge");
    for (String sub : List.of("list", "show", "retry", "purge")) {
      Run help = run("dlq", sub, "--help");
      assertThat(help.exit()).isZero();
      assertThat(help.out()).startsWith("Usage: handoff dlq " + sub);
    }
    assertThat(DlqCommand.since("2026-01-31T08:00:00Z")).isEqualTo(Instant.parse("2026-01-31T08:00:00Z"));
    assertThat(DlqCommand.since("2h")).isBetween(Instant.now().minus(Duration.ofHours(2)).minusSeconds(5),
        Instant.now().minus(Duration.ofHours(2)));
  }
}
