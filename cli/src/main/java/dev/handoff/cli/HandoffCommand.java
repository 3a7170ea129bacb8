package dev.handoff.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code handoff.jar}: the relay and the operator's commands.
 *
 * <pre>java -jar handoff.jar relay --jdbc-url jdbc:postgresql://db/app?user=app --redis-url redis://cache:6379 \
 *     --topics payments:4,refunds
 * java -jar handoff.jar status --topic orders --group billing --json</pre>
 *
 * <p>Exit codes, for every command: 0 done, 1 the check failed (a refused rewind, an unrecoverable repair), 2 a usage
 * error or a failure to reach or use the servers. Errors are one line on standard error, without passwords.
 */
@Command(name = "handoff", mixinStandardHelpOptions = true, versionProvider = HandoffVersion.class,
    sortOptions = false,
    description = "The outbox relay and the operator's commands for handoff's topics and consumer groups.",
    subcommands = {RelayCommand.class, StatusCommand.class, MigrateCommand.class, GrantsCommand.class,
        DlqCommand.class, ReplayCommand.class, FailoverReportCommand.class, ResumeCommand.class, RewindCommand.class,
        TrimCommand.class, RepairCommand.class, OrderedCommand.class})
public final class HandoffCommand implements Runnable {

  /** The exit code of a check that failed. */
  public static final int CHECK_FAILED = 1;

  @Spec
  CommandSpec spec;

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs one command line and returns its exit code. */
  public static int run(String... args) {
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "dev/handoff/cli/logback-cli.xml");
    }
    System.setProperty("org.jooq.no-logo", "true");
    if (System.getProperty("handoff.log.level") == null && (args.length == 0 || !args[0].equals("relay"))) {
      // A one-shot command prints its own summary on stdout; the library's INFO line would repeat it on stderr.
      System.setProperty("handoff.log.level", "WARN");
    }
    return commandLine().execute(args);
  }

  /** The command line with its subcommands; a failure prints one masked line and exits 2. */
  public static CommandLine commandLine() {
    return CommandLines.configure(new CommandLine(new HandoffCommand()), "handoff",
        e -> e.getMessage() != null ? e.getMessage() : e.toString());
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required: "
        + String.join(", ", spec.subcommands().keySet()));
  }
}
