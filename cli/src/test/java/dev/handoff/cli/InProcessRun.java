package dev.handoff.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import picocli.CommandLine;

/** A {@code handoff} command run in the test's JVM: its exit code, and its standard output and error as lines. */
record InProcessRun(int exit, List<String> out, List<String> err) {

  static InProcessRun of(List<String> args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = HandoffCommand.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args.toArray(String[]::new));
    return new InProcessRun(exit, out.toString().lines().toList(), err.toString().lines().toList());
  }
}
