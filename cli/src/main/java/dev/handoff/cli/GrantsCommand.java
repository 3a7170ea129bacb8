package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffGrants;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff grants}: prints the least-privilege grants of one of handoff's roles for a database role of
 * yours, or applies them ({@link HandoffGrants}).
 *
 * <pre>java -jar handoff.jar grants --role relay --to relay_svc
 * java -jar handoff.jar grants --role relay --to relay_svc --apply \
 *     --jdbc-url jdbc:postgresql://db/app?user=owner</pre>
 */
@Command(name = "grants", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Prints (or with --apply runs) the GRANT statements one handoff role needs on its tables:"
        + " application, relay, consumer or operator. docs/operations.md explains each grant.")
final class GrantsCommand implements Callable<Integer> {

  @Option(names = "--role", required = true, description = "application, relay, consumer or operator")
  String role;

  @Option(names = "--to", required = true, paramLabel = "ROLE_NAME",
      description = "the database role to grant to (it must exist; used exactly as given, case included)")
  String to;

  @Option(names = "--schema", defaultValue = "${env:HANDOFF_SCHEMA:-handoff}",
      description = "schema of handoff's tables (env HANDOFF_SCHEMA; default ${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--apply", description = "run the statements (in one transaction) instead of printing them")
  boolean apply;

  @Option(names = "--connect-timeout", defaultValue = "${env:HANDOFF_CONNECT_TIMEOUT:-30s}",
      description = "with --apply: how long to wait for a PostgreSQL that refuses or does not answer, e.g. 30s or"
          + " PT30S (env HANDOFF_CONNECT_TIMEOUT; default ${DEFAULT-VALUE})")
  Duration connectTimeout;

  @Option(names = "--jdbc-url", defaultValue = "${env:HANDOFF_JDBC_URL}",
      description = "with --apply: PostgreSQL JDBC URL of a user that may grant on handoff's tables, usually their"
          + " owner (env HANDOFF_JDBC_URL)")
  String jdbcUrl;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws SQLException {
    HandoffGrants.Role r = HandoffGrants.Role.parse(role);
    if (!apply) {
      spec.commandLine().getOut().print(HandoffGrants.sql(r, schema, to));
      spec.commandLine().getOut().flush();
      return 0;
    }
    if (jdbcUrl == null || jdbcUrl.isBlank()) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--apply needs --jdbc-url or HANDOFF_JDBC_URL");
    }
    // Validated before connecting, so that a bad name fails without touching the database.
    HandoffGrants.statements(r, schema, to);
    try (HikariDataSource db = Connections.database(jdbcUrl, 1, "handoff-grants", connectTimeout)) {
      int n = HandoffGrants.apply(db, r, schema, to);
      spec.commandLine().getOut().println("granted the " + r.name().toLowerCase(Locale.ROOT) + " privileges on schema "
          + schema + " to role " + to + " (" + n + " statements)");
      spec.commandLine().getOut().flush();
      return 0;
    }
  }
}
