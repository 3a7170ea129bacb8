package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffMigrations;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code handoff migrate}: creates or upgrades handoff's tables in the schema, idempotently (Flyway). */
@Command(name = "migrate", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Creates or upgrades handoff's tables in --schema (Flyway, idempotent). Run it as the tables'"
        + " owner; then grant each component its role (handoff grants).")
final class MigrateCommand implements Callable<Integer> {

  @Mixin
  DatabaseOptions database;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    try (HikariDataSource db = database.open(spec, 2, "handoff-migrate")) {
      int applied = HandoffMigrations.migrate(db, database.schema());
      spec.commandLine().getOut().println("schema " + database.schema() + ": " + applied + " migration"
          + (applied == 1 ? "" : "s") + " applied, " + (applied == 0 ? "already up to date" : "now up to date"));
      spec.commandLine().getOut().flush();
      return 0;
    }
  }
}
