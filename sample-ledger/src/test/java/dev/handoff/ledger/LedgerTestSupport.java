package dev.handoff.ledger;

import dev.handoff.cli.HandoffCommand;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.relay.Relay;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * What the ledger's tests build on: a relay, ledger consumers with short timeouts, and the command lines (the
 * sample's and the operator's) run in-process. One test class, one schema and one key prefix: a schema's outbox and relay leases belong to one set
 * of streams, so two key prefixes over one schema would make the relay see "lost" streams and publish again.
 */
final class LedgerTestSupport {

  private final TestEnvironment env;

  LedgerTestSupport(TestEnvironment env) {
    this.env = env;
    LedgerMigrations.migrate(env.dataSource(), env.schema());
  }

  /** What a command printed and returned. */
  record Run(int exit, String out, String err) {}

  String firstPoison() throws Exception {
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT payment_id FROM payment WHERE poison ORDER BY payment_id LIMIT 1");
        var rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }

  Run cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--schema", env.schema(), "--key-prefix", env.keyPrefix()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), all.toArray(String[]::new));
    return new Run(exit, out.toString(), err.toString());
  }

  /**
   * The operator's {@code handoff <args>} ({@code handoff.jar}) in this JVM, against this class's schema and, for the
   * commands that use Redis, its Redis and key prefix.
   */
  Run handoff(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));
    if (args[0].equals("status") || args[0].equals("relay")) {
      all.addAll(List.of("--redis-url", env.redisUri().toString(), "--key-prefix", env.keyPrefix()));
    }
    return handoffAs(all.toArray(String[]::new));
  }

  /** The operator's {@code handoff <args>} in this JVM, with only the options given. */
  static Run handoffAs(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  Relay relay() {
    return Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .build();
  }

  LedgerConsumer ledger(String name, String group) {
    return ledger(name, group, ConsumerFaults.NONE);
  }

  /** The same, with a fault hook (a worker that throws a {@code SimulatedCrash} there dies as a process would). */
  LedgerConsumer ledger(String name, String group, ConsumerFaults faults) {
    return LedgerConsumer.of(StreamConsumer.builder(env.dataSource(), env.redisSpec())
        .faults(faults)
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .group(group)
        .consumerName(name)
        .workers(1)
        .block(Duration.ofMillis(50))
        .minIdle(Duration.ofMillis(600))
        .reclaimInterval(Duration.ofMillis(50))
        .maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)), env.dataSource(), false, null);
  }
}
