package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.migrations.HandoffMigrations;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** The PostgreSQL options every handoff command shares (a picocli mixin), each with an environment variable. */
public final class DatabaseOptions {

  @Option(names = "--jdbc-url", defaultValue = "${env:HANDOFF_JDBC_URL}",
      description = "PostgreSQL JDBC URL, user and password as parameters (env HANDOFF_JDBC_URL)")
  String jdbcUrl;

  @Option(names = "--schema", defaultValue = "${env:HANDOFF_SCHEMA:-handoff}",
      description = "schema of handoff's tables (env HANDOFF_SCHEMA; default ${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--connect-timeout", defaultValue = "${env:HANDOFF_CONNECT_TIMEOUT:-30s}",
      description = "how long to wait at startup for a PostgreSQL or Redis that refuses or does not answer, e.g."
          + " 30s or PT30S (env HANDOFF_CONNECT_TIMEOUT; default ${DEFAULT-VALUE})")
  Duration connectTimeout;

  /** The schema of handoff's tables. */
  public String schema() {
    return schema;
  }

  /** The startup wait for servers. */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /** The JDBC URL as given, masked for logs. */
  public String maskedUrl() {
    return Connections.mask(jdbcUrl);
  }

  /**
   * Opens a pool of at most {@code maxConnections}, waiting for the server up to {@code --connect-timeout}.
   *
   * @throws CommandLine.ParameterException without a JDBC URL (a usage error)
   */
  public HikariDataSource open(CommandSpec command, int maxConnections, String poolName) {
    if (jdbcUrl == null || jdbcUrl.isBlank()) {
      throw new CommandLine.ParameterException(command.commandLine(), "--jdbc-url or HANDOFF_JDBC_URL is required");
    }
    return Connections.database(jdbcUrl, maxConnections, poolName, connectTimeout);
  }

  /**
   * Fails with one line when the schema lacks one of handoff's tables: a command on an unmigrated schema would
   * otherwise fail each step, or report zeros.
   */
  public void requireMigrated(HikariDataSource db) {
    Optional<String> missing;
    try {
      missing = HandoffMigrations.missingTable(db, schema);
    } catch (SQLException e) {
      throw new IllegalStateException("could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
    missing.ifPresent(table -> {
      throw new IllegalStateException("schema '" + schema + "' has no table '" + table + "': apply handoff's"
          + " migrations first (handoff migrate, or relay --migrate), or pass the right --schema");
    });
  }

  /**
   * {@link #requireMigrated}, then fails with one line when the connection's user lacks a privilege that
   * {@code role}'s grants give: a relay under a least-privilege role stops at start instead of failing each cycle.
   */
  public void requireMigratedAndGranted(HikariDataSource db, HandoffGrants.Role role) {
    requireMigrated(db);
    try {
      HandoffMigrations.validate(db, schema, role);
    } catch (SQLException e) {
      throw new IllegalStateException("could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
  }
}
