package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** handoff.jar's command line: help for every command, one-line usage errors, migrate. */
@HandoffTest
class HandoffCommandTest {

  private final TestEnvironment env;

  HandoffCommandTest(TestEnvironment env) {
    this.env = env;
  }

  record Run(int exit, String out, List<String> err) {}

  static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args);
    return new Run(exit, out.toString(), err.toString().lines().toList());
  }

  @Test
  void everyCommandHasHelpThatExitsZero() {
    CommandLine cli = HandoffCommand.commandLine();
    List<String> commands = List.copyOf(cli.getSubcommands().keySet());
    assertThat(commands).contains("relay", "migrate", "grants");
    for (String command : commands) {
      Run r = run(command, "--help");
      assertThat(r.exit()).as("%s --help exit; stderr %s", command, r.err()).isZero();
      assertThat(r.out()).as("%s --help", command).startsWith("Usage: handoff " + command);
      assertThat(r.err()).isEmpty();
    }
    Run top = run("--help");
    assertThat(top.exit()).isZero();
    assertThat(top.out()).startsWith("Usage: handoff").contains(commands.toArray(String[]::new));
  }

  @Test
  void versionPrintsTheVersionTheBuildWroteIn() {
    Run r = run("--version");
    assertThat(r.exit()).isZero();
    assertThat(r.out().strip()).matches("handoff \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?")
        .isEqualTo("handoff " + HandoffVersion.version());
    assertThat(r.err()).isEmpty();
  }

  @Test
  void theReadmeGivesTheCoordinatesOfThisVersion() throws Exception {
    String readme = java.nio.file.Files.readString(java.nio.file.Path.of("..", "README.md"));
    String version = HandoffVersion.version();
    assertThat(readme).contains("Group `dev.handoff`, version `" + version + "`")
        .contains("<artifactId>handoff-bom</artifactId>\n      <version>" + version + "</version>");
  }

  @Test
  void anUnknownCommandIsOneLineWithExitTwo() {
    Run r = run("frobnicate");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).containsExactly("handoff: Unmatched argument at index 0: 'frobnicate' (see handoff --help)");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void noCommandNamesTheCommands() {
    Run r = run();
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).singleElement().asString()
        .startsWith("handoff: a command is required: relay, status, migrate, grants");
  }

  @Test
  void migrateCreatesTheTablesOnceAndThenSaysUpToDate() {
    String schema = "migrated_by_cli";
    Run first = run("migrate", "--jdbc-url", env.postgres().jdbcUrl(), "--schema", schema);
    assertThat(first.exit()).as("stderr %s", first.err()).isZero();
    assertThat(first.out()).matches("schema migrated_by_cli: \\d+ migrations applied, now up to date\\R");
    assertThat(env.queryLong("select count(*) from information_schema.tables where table_schema = ?"
        + " and table_name in ('outbox', 'relay_lease', 'inbox', 'dead_letter')", schema)).isEqualTo(4);
    Run again = run("migrate", "--jdbc-url", env.postgres().jdbcUrl(), "--schema", schema);
    assertThat(again.out()).isEqualTo("schema migrated_by_cli: 0 migrations applied, already up to date"
        + System.lineSeparator());
  }
}
