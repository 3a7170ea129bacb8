package dev.handoff.spring.autoconfigure;

import dev.handoff.migrations.HandoffGrants;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.spring.HandoffStartupException;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * handoff's schema in the application's database: migrated at start-up when {@code handoff.migrate} is true, and
 * checked, by each part before it starts, for the grants of what that part runs.
 *
 * <p>Thread-safe.
 */
public final class HandoffSchema {

  private final DataSource dataSource;
  private final String schema;

  HandoffSchema(DataSource dataSource, String schema, boolean migrate) {
    this.dataSource = dataSource;
    this.schema = schema;
    if (migrate) {
      try {
        HandoffMigrations.migrate(dataSource, schema);
      } catch (RuntimeException e) {
        throw new HandoffStartupException("handoff.migrate: the migration of schema '" + schema + "' failed: "
            + e.getMessage(), e);
      }
    }
  }

  /**
   * Fails unless the schema is migrated and the application's database user holds what {@code role} needs.
   *
   * @throws HandoffStartupException with the line naming the table, column or grant that is missing
   */
  void require(HandoffGrants.Role role) {
    try {
      HandoffMigrations.validate(dataSource, schema, role);
    } catch (IllegalStateException e) {
      throw new HandoffStartupException("handoff schema '" + schema + "': " + e.getMessage()
          + " (or set handoff.migrate=true where the application may run DDL)", e);
    } catch (SQLException e) {
      throw new HandoffStartupException("handoff could not check schema '" + schema + "' in the database: "
          + e.getMessage(), e);
    }
  }
}
