package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.HostAndPort;

/** {@code dlq list} and {@code dlq retry}: the ledger's dead letters. */
@Command(name = "dlq", description = "Lists and retries dead letters.",
    subcommands = {DlqCommand.ListCommand.class, DlqCommand.RetryCommand.class})
final class DlqCommand implements Runnable {

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    throw new picocli.CommandLine.ParameterException(spec.commandLine(), "dlq needs 'list' or 'retry'");
  }

  /** A ledger consumer that is never started: dead letters live in the database, retries run the handler there. */
  static LedgerConsumer ledger(HikariDataSource db, ConnectionOptions connection, String group) {
    HostAndPort redis = connection.redisUrl == null || connection.redisUrl.isBlank()
        ? new HostAndPort("127.0.0.1", 6379) // never contacted: listing and retrying need only the database
        : connection.redisTarget().server();
    return LedgerConsumer.builder(db, redis)
        .schema(connection.schema())
        .keyPrefix(connection.keyPrefix())
        .group(group)
        .persistStats(false)
        .build();
  }

  @Command(name = "list", description = "Lists dead letters, newest first.")
  static final class ListCommand implements Callable<Integer> {

    @Mixin
    ConnectionOptions connection;

    @Option(names = "--group", defaultValue = LedgerConsumer.DEFAULT_GROUP, description = "(${DEFAULT-VALUE})")
    String group;

    @Option(names = "--limit", defaultValue = "100", description = "at most this many (${DEFAULT-VALUE})")
    int limit;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      Logging.handoff("WARN");
      try (HikariDataSource db = connection.migratedDatabase(2, "ledger-dlq")) {
        LedgerConsumer ledger = ledger(db, connection, group);
        List<DeadLetter> letters = ledger.deadLetters(limit);
        ledger.close();
        PrintWriter out = spec.commandLine().getOut();
        if (letters.isEmpty()) {
          out.println("no dead letters in group '" + group + "'");
          return 0;
        }
        out.printf("%-6s %-8s %-36s %-28s %10s  %s%n", "id", "status", "message_id", "stream entry", "deliveries",
            "error");
        for (DeadLetter d : letters) {
          String error = d.error().lines().findFirst().orElse("");
          DeadLetter.Delivery at = d.delivery();
          out.printf("%-6d %-8s %-36s %-28s %10d  %s%n", d.id(), d.status(), d.messageId(),
              at.streamKey().substring(at.streamKey().indexOf('{')) + " " + at.streamId(), at.count(),
              error.length() > 140 ? error.substring(0, 137) + "..." : error);
        }
        return 0;
      }
    }
  }

  @Command(name = "retry", description = "Re-runs the ledger on dead letters (after fixing their cause).")
  static final class RetryCommand implements Callable<Integer> {

    @Mixin
    ConnectionOptions connection;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Which which;

    static final class Which {
      @Option(names = "--all", required = true, description = "every dead letter of the group")
      boolean all;

      @Option(names = "--id", required = true, description = "one dead letter, by its id (see 'dlq list')")
      Long id;
    }

    @Option(names = "--group", defaultValue = LedgerConsumer.DEFAULT_GROUP, description = "(${DEFAULT-VALUE})")
    String group;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      Logging.handoff("WARN");
      PrintWriter out = spec.commandLine().getOut();
      try (HikariDataSource db = connection.migratedDatabase(2, "ledger-dlq")) {
        LedgerConsumer ledger = ledger(db, connection, group);
        try {
          if (which.id != null) {
            boolean ran;
            try {
              ran = ledger.retry(which.id);
            } catch (ConsumerException e) {
              if (stillDead(ledger, which.id)) {
                // The handler failed again, or the entry cannot be retried: a finding (exit 1), like --all's.
                out.println(e.getMessage() + (e.getCause() == null ? "" : ": " + e.getCause().getMessage()));
                return 1;
              }
              throw new LedgerException(e.getMessage(), e); // no such dead letter, or the database failed
            }
            out.println(ran ? "dead letter " + which.id + " retried: charged"
                : "dead letter " + which.id + " was retried before or its message was processed: nothing to do");
            return 0;
          }
          int ran = ledger.retryAll();
          long left = ledger.deadLetters(10_000).stream().filter(d -> "dead".equals(d.status())).count();
          out.printf("retried %d dead letter(s); %d still dead%n", ran, left);
          return left == 0 ? 0 : 1;
        } finally {
          ledger.close();
        }
      }
    }

    private static boolean stillDead(LedgerConsumer ledger, long id) {
      try {
        return ledger.deadLetters(10_000).stream().anyMatch(d -> d.id() == id && "dead".equals(d.status()));
      } catch (RuntimeException e) {
        return false;
      }
    }
  }
}
