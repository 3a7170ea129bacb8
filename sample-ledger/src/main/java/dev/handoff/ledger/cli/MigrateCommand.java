package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.ledger.LedgerMigrations;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code migrate}: applies handoff's and the ledger's migrations. */
@Command(name = "migrate", description = "Applies handoff's and the ledger's migrations.")
final class MigrateCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    String schema = connection.schema();
    Logging.handoff("WARN");
    try (HikariDataSource db = connection.database(2, "ledger-migrate")) {
      int applied = LedgerMigrations.migrate(db, schema);
      spec.commandLine().getOut().printf("schema '%s' is up to date (%d script(s) applied)%n", schema, applied);
      return 0;
    }
  }
}
