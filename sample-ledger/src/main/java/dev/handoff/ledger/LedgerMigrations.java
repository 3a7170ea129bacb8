package dev.handoff.ledger;

import dev.handoff.core.internal.SchemaNames;
import dev.handoff.migrations.HandoffMigrations;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * Applies handoff's tables and the ledger's own ({@code payment}, {@code charge}, {@code consumer_stats}) to one
 * schema. The ledger keeps its own Flyway history table, {@value #HISTORY_TABLE}, beside handoff's, as any
 * application using handoff would.
 */
public final class LedgerMigrations {

  /** The classpath location of the ledger's Flyway scripts. */
  public static final String LOCATION = "classpath:dev/handoff/ledger/db";

  /** The ledger's Flyway history table. */
  public static final String HISTORY_TABLE = "ledger_schema_history";

  private static final List<String> REQUIRED_TABLES =
      List.of("outbox", "relay_lease", "inbox", "dead_letter", "payment", "charge", "consumer_stats");

  private LedgerMigrations() {}

  /**
   * Creates or upgrades handoff's and the ledger's tables in {@code schema}.
   *
   * @return the number of scripts applied (0 when both were up to date)
   */
  public static int migrate(DataSource dataSource, String schema) {
    SchemaNames.requireValid(schema);
    int applied = HandoffMigrations.migrate(dataSource, schema);
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
    return applied + ledger.migrate().migrationsExecuted;
  }

  /**
   * Checks that {@code schema} holds every table the ledger needs.
   *
   * @throws LedgerException naming the first missing table and how to fix it
   */
  public static void requireMigrated(DataSource dataSource, String schema) {
    SchemaNames.requireValid(schema);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      for (String table : REQUIRED_TABLES) {
        ps.setString(1, schema + "." + table);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(1)) {
            throw new LedgerException("schema '" + schema + "' has no table '" + table
                + "': run the 'migrate' command first (or pass the right --schema)");
          }
        }
      }
    } catch (SQLException e) {
      throw new LedgerException("could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
  }
}
