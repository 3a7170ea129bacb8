package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Json;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code verify}: audits the ledger; exit 0 iff it is right. */
@Command(name = "verify", description = "Audits the ledger: exit 0 iff every non-poison payment has exactly one"
    + " charge and no charge lacks a payment; double charges are diagnosed as redelivery or producer sent twice.")
final class VerifyCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "print the result as JSON")
  boolean json;

  @Option(names = "--group", defaultValue = LedgerConsumer.DEFAULT_GROUP,
      description = "the ledger (consumer group) to audit (${DEFAULT-VALUE})")
  String group;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    String schema = connection.schema();
    Logging.handoff("WARN");
    try (HikariDataSource db = connection.migratedDatabase(2, "ledger-verify")) {
      LedgerAudit.Result result = LedgerAudit.audit(db, schema, group);
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(Json.write(result.toMap()));
      } else {
        result.lines().forEach(out::println);
      }
      return result.passed() ? 0 : 1;
    }
  }
}
