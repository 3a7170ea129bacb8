package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Json;
import dev.handoff.ledger.ConsumerCounters;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code verify}: audits the ledger, exit 0 iff it is right; then shows what the group's ledger consumers counted
 * (deliveries, duplicates skipped, reclaimed), which only the ledger records.
 */
@Command(name = "verify", description = "Audits the ledger: exit 0 iff every non-poison payment has exactly one"
    + " charge and no charge lacks a payment; double charges are diagnosed as redelivery or producer sent twice."
    + " Also shows the deliveries, duplicates skipped and reclaimed entries the group's consumers recorded.")
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
      Optional<ConsumerCounters.Recorded> counters = ConsumerCounters.recorded(db, schema, group);
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        Map<String, Object> m = result.toMap();
        Map<String, Object> recorded = counters.isEmpty() ? null : new LinkedHashMap<>();
        counters.ifPresent(c -> {
          recorded.put("deliveries", c.deliveries());
          recorded.put("duplicates_skipped", c.duplicatesSkipped());
          recorded.put("reclaimed", c.reclaimed());
        });
        m.put("consumer_counters", recorded);
        out.println(Json.write(m));
      } else {
        result.lines().forEach(out::println);
        out.println(counters.map(c -> String.format("consumers     deliveries %,d, duplicates skipped %,d, reclaimed"
            + " %,d (as the group's ledger consumers recorded them)", c.deliveries(), c.duplicatesSkipped(),
            c.reclaimed())).orElse("consumers     no counters recorded for group '" + group + "'"));
      }
      return result.passed() ? 0 : 1;
    }
  }
}
