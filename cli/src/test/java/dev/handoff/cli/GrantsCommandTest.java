package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.migrations.HandoffGrants;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code handoff grants}: prints a role's grants as the API renders them, or applies them. */
@HandoffTest
class GrantsCommandTest {

  private final TestEnvironment env;

  GrantsCommandTest(TestEnvironment env) {
    this.env = env;
  }

  private record Run(int exit, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  @Test
  void printsTheGrantsOfARoleForANamedRole() {
    Run r = run("grants", "--role", "relay", "--to", "relay_svc", "--schema", "billing");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo(HandoffGrants.sql(HandoffGrants.Role.RELAY, "billing", "relay_svc"));
    assertThat(r.out()).contains("GRANT DELETE ON \"billing\".outbox TO \"relay_svc\";");
  }

  @Test
  void appliesThemWithApply() {
    DatabaseRole role = env.newRole();
    Run r = run("grants", "--role", "consumer", "--to", role.name(), "--schema", env.schema(), "--apply",
        "--jdbc-url", env.postgres().jdbcUrl());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().trim()).isEqualTo("granted the consumer privileges on schema " + env.schema() + " to role "
        + role.name() + " (" + HandoffGrants.statements(HandoffGrants.Role.CONSUMER, env.schema(), role.name()).size()
        + " statements)");
    assertThat(role.privileges()).contains("schema:USAGE", "inbox:DELETE", "outbox:SELECT")
        .doesNotContain("outbox:DELETE");
  }

  @Test
  void refusesABadRoleOrNameWithoutConnecting() {
    Run unknown = run("grants", "--role", "admin", "--to", "x");
    assertThat(unknown.exit()).isEqualTo(2);
    assertThat(unknown.err()).contains("role must be one of application, relay, consumer, operator, was 'admin'");
    Run badName = run("grants", "--role", "relay", "--to", "x;drop", "--apply", "--jdbc-url",
        "jdbc:postgresql://127.0.0.1:1/none?password=secret");
    assertThat(badName.exit()).isEqualTo(2);
    assertThat(badName.err()).contains("role name must match").doesNotContain("cannot connect");
    Run noUrl = run("grants", "--role", "relay", "--to", "x", "--apply", "--jdbc-url", "");
    assertThat(noUrl.exit()).isEqualTo(2);
    assertThat(noUrl.err()).contains("--apply needs --jdbc-url");
  }

  @Test
  void applyWaitsForAnUnreachableDatabaseAsLongAsConnectTimeoutSaysAndNoLonger() {
    Run r = run("grants", "--role", "relay", "--to", "relay_svc", "--apply", "--connect-timeout", "1s",
        "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none?user=owner&password=secret");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:1/none",
        "(waited 1000 ms, --connect-timeout)").doesNotContain("secret");
  }
}
