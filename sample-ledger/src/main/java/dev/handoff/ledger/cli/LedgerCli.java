package dev.handoff.ledger.cli;

import dev.handoff.cli.CommandLines;
import dev.handoff.cli.Connections;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The sample ledger's command line ({@code java -jar sample-ledger.jar <command>}): the ledger's own commands. The
 * relay, {@code status}, {@code dlq} and handoff's {@code migrate} are the operator's command line's
 * ({@code java -jar cli/target/handoff.jar}); the demo is ledger-demo's ({@code java -jar ledger-demo.jar}). Exit
 * codes: 0 success, 1 the command ran and found a problem ({@code verify} failed), 2 a usage error or an error such
 * as a bad URL, an unreachable server or a missing schema, always reported as one line on stderr without passwords.
 */
@Command(name = "sample-ledger", mixinStandardHelpOptions = true, scope = CommandLine.ScopeType.INHERIT,
    sortOptions = false,
    description = "The handoff sample billing ledger: payments through a transactional outbox into Redis Streams"
        + " or lists, charged exactly once.",
    subcommands = {PayCommand.class, ConsumeCommand.class, VerifyCommand.class,
        CommandLine.HelpCommand.class})
public final class LedgerCli implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs a command with the process's stdout and stderr; returns the exit code. */
  public static int run(String... args) {
    return execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args);
  }

  /** Runs a command writing to {@code out} and {@code err}; returns the exit code. */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    return execute(new LedgerCli(), "sample-ledger", out, err, args);
  }

  /**
   * Runs {@code command} (a picocli command object) as this command line runs its own: its logging, its errors as
   * one line after {@code tool}, and handoff's log level given back afterwards. ledger-demo's jar runs through it.
   */
  public static int execute(Object command, String tool, PrintWriter out, PrintWriter err, String... args) {
    // Before the first logger exists: a static Logger anywhere on this path would configure logging too early.
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "dev/handoff/ledger/cli/logback-ledger.xml");
    }
    System.setProperty("org.jooq.no-logo", "true");
    CommandLine cli = new CommandLine(command);
    cli.setOut(out);
    cli.setErr(err);
    CommandLines.configure(cli, tool, LedgerCli::oneLine);
    // A command sets handoff's log level for its own run; run in a JVM that goes on (a test, an embedding
    // application), it must not silence that JVM's later warnings.
    Logging.Restore level = Logging.saved();
    try {
      int code = cli.execute(args);
      out.flush();
      err.flush();
      return code;
    } finally {
      level.close();
    }
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required: pay, consume or verify"
        + " (the relay, status and dlq are handoff.jar's; the demo is ledger-demo.jar)");
  }

  /** The first line of what went wrong, with passwords masked. */
  static String oneLine(Throwable e) {
    Throwable t = e;
    String message = t.getMessage();
    while ((message == null || message.isBlank()) && t.getCause() != null) {
      t = t.getCause();
      message = t.getMessage();
    }
    if (message == null || message.isBlank()) {
      message = t.getClass().getSimpleName();
    } else if (!(t instanceof dev.handoff.ledger.LedgerException || t instanceof Connections.UnreachableException
        || t instanceof IllegalArgumentException)) {
      message = t.getClass().getSimpleName() + ": " + message;
    }
    int nl = message.indexOf('\n');
    if (nl >= 0) {
      message = message.substring(0, nl);
    }
    return Connections.mask(message.strip());
  }
}
