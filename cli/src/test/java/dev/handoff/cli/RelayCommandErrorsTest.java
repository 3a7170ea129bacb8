package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every mistake a user can make with {@code handoff relay} is one line on stderr and exit 2: a usage error points to
 * {@code --help}, a setting is named by its option, a duration says what it expects, an unmigrated schema stops the
 * relay at once instead of failing every cycle, and a password never shows while the reason always does.
 */
@HandoffTest
class RelayCommandErrorsTest {

  private final TestEnvironment env;

  RelayCommandErrorsTest(TestEnvironment env) {
    this.env = env;
  }

  private record Run(int exit, String out, List<String> err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    List<String> line = new java.util.ArrayList<>(List.of("relay"));
    line.addAll(List.of(args));
    int exit = cli.execute(line.toArray(String[]::new));
    return new Run(exit, out.toString(), err.toString().lines().toList());
  }

  private String[] connected(String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url",
        env.redisUri().toString(), "--topics", "orders", "--key-prefix", env.keyPrefix(), "--connect-timeout", "0s"));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  private static void assertOneLine(Run r, String expected) {
    assertThat(r.exit()).as("exit; stderr %s", r.err()).isEqualTo(2);
    assertThat(r.err()).as("stderr; stdout %s", r.out()).hasSize(1);
    assertThat(r.err().get(0)).isEqualTo(expected);
    assertThat(r.out()).isEmpty();
  }

  @Test
  void aUsageErrorIsOneLineThatPointsToHelp() {
    assertOneLine(run("--bogus"), "handoff: Unknown option: '--bogus' (see handoff relay --help)");
    assertOneLine(run("--topics", "orders"),
        "handoff: --jdbc-url or HANDOFF_JDBC_URL is required (see handoff relay --help)");
    assertOneLine(run(connected("--transport", "kafka")),
        "handoff: --transport must be stream or list, was 'kafka' (see handoff relay --help)");
  }

  @Test
  void aMetricsPortOrAddressThatCannotBeUsedIsOneLine() {
    assertOneLine(run(connected("--metrics-port", "0")),
        "handoff: --metrics-port must be a port from 1 to 65535, was 0 (see handoff relay --help)");
    assertOneLine(run(connected("--metrics-port", "65536")),
        "handoff: --metrics-port must be a port from 1 to 65535, was 65536 (see handoff relay --help)");
    assertOneLine(run(connected("--metrics-port", "9464", "--metrics-bind", "no-such-host.invalid")),
        "handoff: --metrics-bind 'no-such-host.invalid' is not an address or a known host name"
            + " (see handoff relay --help)");
  }

  @Test
  void aDurationSaysWhatItExpectsAndAcceptsShortForms() {
    Run r = run("--lease-ttl", "ten seconds", "--topics", "orders");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).singleElement().asString()
        .startsWith("handoff: Invalid value for option '--lease-ttl': 'ten seconds' is not a duration:"
            + " expected a number with ms, s, m, h or d (500ms, 10s, 2m) or ISO-8601 (PT10S)");
    assertThat(CommandLines.duration("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(CommandLines.duration("10s")).isEqualTo(Duration.ofSeconds(10));
    assertThat(CommandLines.duration("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(CommandLines.duration("PT10S")).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void aSettingTheRelayRefusesIsNamedByItsOption() {
    assertOneLine(run(connected("--schema", env.schema(), "--lease-ttl", "100ms")),
        "handoff: --lease-ttl must be at least 300 ms, was PT0.1S");
  }

  @Test
  void aSchemaWithoutHandoffsTablesStopsTheRelayAtOnce() {
    assertOneLine(run(connected("--schema", "no_such_schema")),
        "handoff: schema 'no_such_schema' has no table 'outbox': apply handoff's migrations first"
            + " (handoff migrate, or relay --migrate), or pass the right --schema");
  }

  @Test
  void aRelayRoleLackingAGrantStopsTheRelayAtOnceNamingTheGrant() {
    try (DatabaseRole role = env.newRole().grant(HandoffGrants.Role.RELAY)
        .execute("REVOKE DELETE ON " + env.schema() + ".relay_member FROM ROLE")) {
      List<String> args = new java.util.ArrayList<>(List.of(connected("--schema", env.schema())));
      args.set(1, role.jdbcUrl());
      assertOneLine(run(args.toArray(String[]::new)), "handoff: role '" + role.name() + "' lacks DELETE on "
          + env.schema() + ".relay_member, which the relay role needs: apply its grants as the owner of handoff's"
          + " tables (handoff.jar grants --role relay --to " + role.name() + " --apply, or HandoffGrants.apply)");
    }
  }

  @Test
  void aTopicCountThatDiffersFromTheDeclaredOneStopsTheRelayAtOnceNamingBoth() {
    env.execute("INSERT INTO topic (name, shards) VALUES ('declared', 4)");
    String at = env.queryList("SELECT declared_at FROM topic WHERE name = 'declared'", java.sql.Timestamp.class)
        .get(0).toInstant().toString();
    List<String> args = new java.util.ArrayList<>(List.of(connected("--schema", env.schema())));
    args.set(args.indexOf("orders"), "declared:2");
    Run r = run(args.toArray(String[]::new));
    assertThat(r.exit()).as("exit; stderr %s", r.err()).isEqualTo(2);
    assertThat(r.err()).singleElement().asString()
        .startsWith("handoff: topic 'declared' has 4 shard(s), as declared in the database on " + at + ", and relay ")
        .contains(" states 2: give every outbox, relay and consumer of a topic the same count");
    assertThat(env.queryLong("SELECT count(*) FROM relay_lease WHERE topic = 'declared'")).isZero();
  }

  @Test
  void aTopicWithoutACountTakesTheDeclaredOneAndOneNeverDeclaredTakesOne() {
    env.execute("INSERT INTO topic (name, shards) VALUES ('counted', 3)");
    assertThat(RelayCommand.resolve(env.dataSource(), env.schema(),
        RelayCommand.parseTopics(List.of("counted", "fresh", "stated:2"))))
        .containsExactly(TopicConfig.of("counted").withShards(3), TopicConfig.of("fresh"),
            TopicConfig.of("stated").withShards(2));
  }

  @Test
  void anUnreachableDatabaseKeepsTheReasonAndMasksOnlyThePassword() {
    Run r = run("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=hunter2", "--topics",
        "orders", "--connect-timeout", "0s");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).singleElement().asString()
        .startsWith("handoff: cannot connect to PostgreSQL at"
            + " jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=***: ")
        .contains("refused")
        .doesNotContain("hunter2");
  }

  @Test
  void maskHidesOnlyThePasswordValueAndKeepsWhatFollows() {
    assertThat(Connections.mask("cannot connect at jdbc:postgresql://h/db?user=a&password=s3cret: Connection refused"))
        .isEqualTo("cannot connect at jdbc:postgresql://h/db?user=a&password=***: Connection refused");
    assertThat(Connections.mask("jdbc:postgresql://h/db?password=s3cret&ssl=true"))
        .isEqualTo("jdbc:postgresql://h/db?password=***&ssl=true");
    assertThat(Connections.mask(Connections.mask("x?password=s3cret y"))).isEqualTo("x?password=*** y");
  }
}
