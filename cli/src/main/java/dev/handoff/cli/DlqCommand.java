package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.admin.RetryRequestResult;
import dev.handoff.consumer.status.DeadLetter;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff dlq list|show|retry|purge}: a consumer group's dead letters from the command line, through
 * {@link DeadLetterAdmin}. The command runs no handler: {@code retry} records a request in the database, and the
 * running consumers of the group run it through their own handler at their next housekeeping turn; nothing is
 * written to Redis.
 *
 * <pre>java -jar handoff.jar dlq list --group billing
 * java -jar handoff.jar dlq retry --group billing --since 2h
 * java -jar handoff.jar dlq purge --group billing --id 42</pre>
 */
@Command(name = "dlq", mixinStandardHelpOptions = true, sortOptions = false,
    description = "A consumer group's dead letters: list, show, retry (requested; the running consumers of the group"
        + " run it through their handler) and purge.",
    subcommands = {DlqCommand.ListCommand.class, DlqCommand.ShowCommand.class, DlqCommand.RetryCommand.class,
        DlqCommand.PurgeCommand.class})
final class DlqCommand implements Runnable {

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a dlq command is required: "
        + String.join(", ", spec.subcommands().keySet()));
  }

  /** {@code --since}: an ISO-8601 instant, or a duration ({@code 2h}) meaning that long ago. */
  static Instant since(String text) {
    try {
      return Instant.parse(text.strip());
    } catch (DateTimeParseException notAnInstant) {
      try {
        return Instant.now().minus(CommandLines.duration(text));
      } catch (CommandLine.TypeConversionException e) {
        throw new CommandLine.TypeConversionException("'" + text + "' is neither an instant (2026-01-31T08:00:00Z)"
            + " nor a duration meaning that long ago (2h, 30m, PT2H)");
      }
    }
  }

  /** The options that choose dead letters: {@code --group}, and one of {@code --id}, {@code --all}, {@code --since}. */
  static final class Selection {

    @Option(names = "--group", paramLabel = "GROUP", description = "the consumer group (default: every group)")
    String group;

    @Option(names = "--id", paramLabel = "ID", description = "one dead letter, by its id")
    Long id;

    @Option(names = "--all", description = "every dead letter (of --group)")
    boolean all;

    @Option(names = "--since", paramLabel = "TIME", converter = SinceConverter.class,
        description = "those dead-lettered since TIME: an instant (2026-01-31T08:00:00Z) or a duration meaning that"
            + " long ago (2h, 30m)")
    Instant since;

    /**
     * The selection; with {@code required}, exactly one of {@code --id}, {@code --all}, {@code --since} must be
     * given, else a usage error.
     */
    DeadLetterSelection toSelection(CommandSpec spec, boolean required) {
      int given = (id != null ? 1 : 0) + (all ? 1 : 0) + (since != null ? 1 : 0);
      if (given > 1 || (required && given == 0)) {
        throw new CommandLine.ParameterException(spec.commandLine(), required
            ? "exactly one of --id, --all, --since is required" : "at most one of --id, --all, --since is allowed");
      }
      try {
        return id != null ? DeadLetterSelection.id(id)
            : since != null ? DeadLetterSelection.deadSince(since) : DeadLetterSelection.all();
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--id: " + e.getMessage());
      }
    }

    /** {@code group billing} or {@code every group}. */
    String scope() {
      return group == null ? "every group" : "group " + group;
    }
  }

  /** picocli's converter for {@code --since}. */
  static final class SinceConverter implements CommandLine.ITypeConverter<Instant> {
    @Override
    public Instant convert(String value) {
      return since(value);
    }
  }

  /** Opens the database, checks the schema and runs {@code work}; a library error keeps its cause on its one line. */
  static <T> T withAdmin(DatabaseOptions database, CommandSpec spec, Function<DeadLetterAdmin, T> work) {
    try (HikariDataSource db = database.open(spec, 2, "handoff-dlq")) {
      database.requireMigrated(db);
      DeadLetterAdmin admin = DeadLetterAdmin.builder(db).schema(database.schema()).build();
      try {
        return work.apply(admin);
      } catch (ConsumerException e) {
        Throwable cause = e.getCause();
        throw new IllegalStateException(e.getMessage() + (cause == null ? ""
            : ": " + CommandLines.firstLine(cause.getMessage())), e);
      }
    }
  }

  private static PrintWriter out(CommandSpec spec) {
    return spec.commandLine().getOut();
  }

  @Command(name = "list", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Lists dead letters, newest first, with their state: dead, retry-requested, retried or"
          + " retry-failed (a requested retry ran and the handler failed again).")
  static final class ListCommand implements Callable<Integer> {

    @Mixin
    DatabaseOptions database;

    @Mixin
    Selection selection;

    @Option(names = "--limit", defaultValue = "100", description = "at most this many (default ${DEFAULT-VALUE})")
    int limit;

    @Option(names = "--json", description = "one JSON array instead of the table and the summary")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      DeadLetterSelection s = selection.toSelection(spec, false);
      if (limit < 1 || limit > 100_000) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--limit must be between 1 and 100000, was "
            + limit);
      }
      List<DeadLetter> letters = withAdmin(database, spec, admin -> admin.list(selection.group, s, limit));
      PrintWriter out = out(spec);
      if (json) {
        out.println(DlqOutput.json(letters));
      } else {
        DlqOutput.table(out, letters);
        out.println(DlqOutput.listSummary(letters, selection.scope(), limit));
      }
      out.flush();
      return 0;
    }
  }

  @Command(name = "show", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Shows one dead letter: its message's identity, its state, the error and the last failed retry.")
  static final class ShowCommand implements Callable<Integer> {

    @Mixin
    DatabaseOptions database;

    @Option(names = "--id", required = true, paramLabel = "ID", description = "the dead letter's id")
    long id;

    @Option(names = "--json", description = "one JSON object")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      DeadLetter d = withAdmin(database, spec, admin -> admin.show(id))
          .orElseThrow(() -> new IllegalStateException("no dead letter " + id + " in schema " + database.schema()));
      PrintWriter out = out(spec);
      if (json) {
        out.println(DlqOutput.json(d));
      } else {
        DlqOutput.details(out, d);
      }
      out.flush();
      return 0;
    }
  }

  @Command(name = "retry", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Requests a retry of dead letters (exactly one of --id, --all, --since). It runs no handler: the"
          + " running consumers of the group pick the request up within their retry-request interval (5 s by"
          + " default) and run it through their handler, once; nothing is written to Redis.")
  static final class RetryCommand implements Callable<Integer> {

    @Mixin
    DatabaseOptions database;

    @Mixin
    Selection selection;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      DeadLetterSelection s = selection.toSelection(spec, true);
      RetryRequestResult r = withAdmin(database, spec, admin -> admin.requestRetry(selection.group, s));
      out(spec).println(DlqOutput.retrySummary(r, selection.scope()));
      out(spec).flush();
      return 0;
    }
  }

  @Command(name = "purge", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Deletes dead letters (exactly one of --id, --all, --since), in every state. Their inbox markers"
          + " stay dead, so a redelivery or a replay of those messages still runs no handler.")
  static final class PurgeCommand implements Callable<Integer> {

    @Mixin
    DatabaseOptions database;

    @Mixin
    Selection selection;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      DeadLetterSelection s = selection.toSelection(spec, true);
      long n = withAdmin(database, spec, admin -> admin.purge(selection.group, s));
      out(spec).println("purged " + n + " dead letter" + (n == 1 ? "" : "s") + " of " + selection.scope()
          + " (their inbox markers stay dead: a redelivery or replay runs no handler)");
      out(spec).flush();
      return 0;
    }
  }
}
