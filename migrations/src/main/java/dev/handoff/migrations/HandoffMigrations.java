package dev.handoff.migrations;

import dev.handoff.core.internal.SchemaNames;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies handoff's schema ({@code outbox}, {@code relay_lease}, {@code inbox}, {@code dead_letter} and the
 * tables beside them, {@link #TABLES}) with Flyway.
 *
 * <p>The scripts live on the classpath at {@value #LOCATION}. They use unqualified table names, so they can be
 * applied into any schema. handoff keeps its own Flyway history table, {@value #HISTORY_TABLE}, inside its schema,
 * which lets it coexist with the application's own migrations and their {@code flyway_schema_history}. An
 * application that prefers to run everything from its own Flyway instance can add {@value #LOCATION} to its
 * locations instead, with the target schema as Flyway's default schema.
 *
 * <p>Migrating is idempotent: applying an up-to-date schema again changes nothing. This class is thread-safe;
 * concurrent migrations of the same schema are serialized by Flyway's lock on the history table.
 */
public final class HandoffMigrations {

  /** The schema used when none is given. */
  public static final String DEFAULT_SCHEMA = SchemaNames.DEFAULT_SCHEMA;

  /** The classpath location of handoff's Flyway scripts. */
  public static final String LOCATION = "classpath:dev/handoff/migrations/db";

  /** The name of handoff's own Flyway history table, created inside handoff's schema. */
  public static final String HISTORY_TABLE = "handoff_schema_history";

  /** Every table the migrations create, in the order they are checked. */
  public static final List<String> TABLES =
      List.of("outbox", "outbox_purged", "relay_lease", "relay_member", "inbox", "dead_letter", "batch_seal",
          "topic", "replay_request", "consumer_lease", "consumer_member");

  private HandoffMigrations() {}

  /**
   * The first of handoff's {@link #TABLES} that {@code schema} lacks, or empty when it has them all: how a
   * component refuses at once to run on an unmigrated or misnamed schema, instead of failing every cycle.
   *
   * @throws SQLException if the database cannot be asked (which says nothing about the schema)
   */
  public static Optional<String> missingTable(DataSource dataSource, String schema) throws SQLException {
    SchemaNames.requireValid(schema);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      for (String table : TABLES) {
        ps.setString(1, schema + "." + table);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            return Optional.of(table);
          }
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Creates or upgrades handoff's tables in the {@value #DEFAULT_SCHEMA} schema.
   *
   * @return the number of scripts applied (0 when the schema was up to date)
   */
  public static int migrate(DataSource dataSource) {
    return migrate(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * Creates or upgrades handoff's tables in {@code schema}, creating the schema if it does not exist.
   *
   * @param schema a schema name matching {@link SchemaNames#PATTERN}
   * @return the number of scripts applied (0 when the schema was up to date)
   * @throws IllegalArgumentException if the schema name is not a plain lower-case identifier
   * @throws org.flywaydb.core.api.FlywayException if a script fails; the failed script is rolled back
   */
  public static int migrate(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    SchemaNames.requireValid(schema);
    try {
      MigrateResult result = flyway(dataSource, schema).migrate();
      return result.migrationsExecuted;
    } catch (FlywayException e) {
      if (deniedAPrivilege(e)) {
        throw new FlywayException("migrating handoff's schema '" + schema + "' was refused a privilege ("
            + rootMessage(e) + "): migrations run DDL and need the owner of handoff's tables; a component that runs"
            + " under a least-privilege role checks its schema with HandoffMigrations.validate instead", e);
      }
      throw e;
    }
  }

  /**
   * Checks, without changing anything, that {@code schema} is migrated and that the connection's user holds every
   * privilege that {@code role}'s grants give ({@link HandoffGrants}): what a component running under a
   * least-privilege role, which must not run DDL, checks before it starts.
   *
   * @throws IllegalStateException with one line naming the first thing missing: a table, a column, or the
   *     privilege, the role and how to grant it
   * @throws SQLException if the database cannot be asked (which says nothing about the schema)
   */
  public static void validate(DataSource dataSource, String schema, HandoffGrants.Role role) throws SQLException {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(role, "role");
    SchemaNames.requireValid(schema);
    Optional<String> problem = SchemaValidation.firstProblem(dataSource, schema, role);
    if (problem.isPresent()) {
      throw new IllegalStateException(problem.get());
    }
  }

  private static boolean deniedAPrivilege(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && "42501".equals(s.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String message = t.getMessage();
    return message == null ? t.toString() : message.lines().findFirst().orElse(message);
  }

  private static Flyway flyway(DataSource dataSource, String schema) {
    return Flyway.configure(HandoffMigrations.class.getClassLoader())
        .dataSource(dataSource)
        .schemas(schema)
        .defaultSchema(schema)
        .createSchemas(true)
        // The schema may already hold the application's own tables and Flyway history: start handoff's
        // history at version 0 there instead of refusing a non-empty schema.
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .table(HISTORY_TABLE)
        .locations(LOCATION)
        .placeholderReplacement(false)
        .loggers("slf4j")
        .load();
  }
}
