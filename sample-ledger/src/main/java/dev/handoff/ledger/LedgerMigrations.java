package dev.handoff.ledger;

import dev.handoff.migrations.HandoffMigrations;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * The ledger's tables ({@code payment}, {@code charge}, {@code consumer_stats}) beside handoff's in one schema. The
 * ledger keeps its own Flyway history table, {@value #HISTORY_TABLE}, beside handoff's, as any application using
 * handoff would. Handoff's tables are the operator's ({@code java -jar cli/target/handoff.jar migrate}); the ledger's
 * commands create the ledger's own the first time they run ({@link #ensureTables}), as an application does.
 */
public final class LedgerMigrations {

  /** The classpath location of the ledger's Flyway scripts. */
  public static final String LOCATION = "classpath:dev/handoff/ledger/db";

  /** The ledger's Flyway history table. */
  public static final String HISTORY_TABLE = "ledger_schema_history";

  private static final List<String> HANDOFF_TABLES = List.of("outbox", "relay_lease", "inbox", "dead_letter");
  private static final List<String> LEDGER_TABLES = List.of("payment", "charge", "consumer_stats");

  /** A schema name the ledger interpolates into its SQL: a lower-case identifier of at most 48 characters. */
  private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,47}");

  private LedgerMigrations() {}

  /**
   * Returns {@code schema} if it is a lower-case SQL identifier of at most 48 characters (the ledger puts it in its
   * SQL, where it cannot be a bound parameter).
   *
   * @throws IllegalArgumentException naming the offending value otherwise
   */
  public static String requireValidSchema(String schema) {
    if (schema == null || !SCHEMA.matcher(schema).matches()) {
      throw new IllegalArgumentException("schema must match " + SCHEMA.pattern()
          + " (lower-case letters, digits, underscores), was " + (schema == null ? "null" : "'" + schema + "'"));
    }
    return schema;
  }

  /**
   * Creates or upgrades handoff's and the ledger's tables in {@code schema} (the demo and the tests, which own their
   * schema).
   *
   * @return the number of scripts applied (0 when both were up to date)
   */
  public static int migrate(DataSource dataSource, String schema) {
    requireValidSchema(schema);
    return HandoffMigrations.migrate(dataSource, schema) + migrateLedger(dataSource, schema);
  }

  /**
   * Creates or upgrades the ledger's own tables in {@code schema}, which must hold handoff's.
   *
   * @return the number of scripts applied
   */
  public static int migrateLedger(DataSource dataSource, String schema) {
    requireValidSchema(schema);
    Flyway ledger = Flyway.configure(LedgerMigrations.class.getClassLoader())
        .dataSource(dataSource)
        .schemas(schema)
        .defaultSchema(schema)
        .createSchemas(true)
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .table(HISTORY_TABLE)
        .locations(LOCATION)
        .loggers("slf4j")
        .load();
    return ledger.migrate().migrationsExecuted;
  }

  /**
   * What the ledger's commands do first: handoff's tables must be in {@code schema}, and the ledger's own are created
   * if any is missing. Once they exist nothing is run, so that a role without the right to create tables runs the
   * commands once the tables' owner created them (docs/operations.md's database roles).
   *
   * @throws LedgerException naming the first of handoff's tables that is missing, and how to create it
   */
  public static void ensureTables(DataSource dataSource, String schema) {
    requireValidSchema(schema);
    String missing = firstMissing(dataSource, schema, HANDOFF_TABLES);
    if (missing != null) {
      throw new LedgerException("schema '" + schema + "' has no table '" + missing + "': create handoff's tables"
          + " first (java -jar cli/target/handoff.jar migrate --schema " + schema + "), or pass the right --schema");
    }
    if (firstMissing(dataSource, schema, LEDGER_TABLES) != null) {
      migrateLedger(dataSource, schema);
    }
  }

  /** The first of {@code tables} that {@code schema} lacks, or null. */
  private static String firstMissing(DataSource dataSource, String schema, List<String> tables) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      for (String table : tables) {
        ps.setString(1, schema + "." + table);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            return table;
          }
        }
      }
      return null;
    } catch (SQLException e) {
      throw new LedgerException("could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
  }
}
