package dev.handoff.benchmarks;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import dev.handoff.cli.CommandLines;
import dev.handoff.cli.Connections;
import java.io.PrintWriter;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The benchmarks' command line ({@code java -jar benchmarks/target/handoff-benchmarks.jar bench ...}): the
 * end-to-end benchmark and the soak on the sample ledger ({@link BenchCommand}). The component benchmarks (relay,
 * append, consumer, lists, cluster) are main classes of the same jar, run with {@code java -cp}. Exit codes: 0
 * done, 1 a soak whose figures are not flat or whose audit failed, 2 a usage error or an error such as a bad URL or
 * an unreachable server, reported as one line on stderr without passwords.
 */
@Command(name = "handoff-benchmarks", mixinStandardHelpOptions = true, scope = CommandLine.ScopeType.INHERIT,
    sortOptions = false, description = "handoff's benchmarks: the end-to-end benchmark and the soak on the sample"
        + " ledger.", subcommands = {BenchCommand.class, CommandLine.HelpCommand.class})
public final class BenchmarksCli implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
  }

  /** Runs a command writing to {@code out} and {@code err}; returns the exit code. */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    // Before the first logger exists: a static Logger anywhere on this path would configure logging too early.
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "dev/handoff/benchmarks/logback-benchmarks.xml");
    }
    System.setProperty("org.jooq.no-logo", "true");
    CommandLine cli = new CommandLine(new BenchmarksCli());
    cli.setOut(out);
    cli.setErr(err);
    CommandLines.configure(cli, "handoff-benchmarks", BenchmarksCli::oneLine);
    // A command sets handoff's log level for its own run; run in a JVM that goes on (a test), it must not silence
    // that JVM's later warnings.
    Level before = handoffLogger() == null ? null : handoffLogger().getLevel();
    try {
      int code = cli.execute(args);
      out.flush();
      err.flush();
      return code;
    } finally {
      if (handoffLogger() != null) {
        handoffLogger().setLevel(before);
      }
    }
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required: bench");
  }

  /** Sets the level of handoff's own loggers (library and ledger) for this run. */
  static void handoffLogLevel(String level) {
    if (handoffLogger() != null) {
      handoffLogger().setLevel(Level.toLevel(level));
    }
  }

  private static Logger handoffLogger() {
    return LoggerFactory.getLogger("dev.handoff") instanceof Logger logger ? logger : null;
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
