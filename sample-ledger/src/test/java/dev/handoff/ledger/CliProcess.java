package dev.handoff.ledger;

import dev.handoff.cli.HandoffCommand;
import dev.handoff.ledger.cli.LedgerCli;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The sample ledger's command line, or the operator's ({@code handoff.jar}), as a real process launched from the test
 * classpath.
 */
final class CliProcess {

  final Process process;
  final Path out;
  final Path err;

  private CliProcess(Process process, Path out, Path err) {
    this.process = process;
    this.out = out;
    this.err = err;
  }

  /** Starts {@code sample-ledger <args>} with HANDOFF_* variables removed from its environment. */
  static CliProcess start(String... args) throws IOException {
    return start(LedgerCli.class, args);
  }

  /** Starts the operator's {@code handoff <args>} ({@code java -jar cli/target/handoff.jar <args>}) the same way. */
  static CliProcess handoff(String... args) throws IOException {
    return start(HandoffCommand.class, args);
  }

  private static CliProcess start(Class<?> main, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-XX:+UseSerialGC");
    command.add("-Xmx256m");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(main.getName());
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("HANDOFF_"));
    Path out = Files.createTempFile("ledger-cli", ".out");
    Path err = Files.createTempFile("ledger-cli", ".err");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    out.toFile().deleteOnExit();
    err.toFile().deleteOnExit();
    return new CliProcess(pb.start(), out, err);
  }

  /** Waits for the exit and returns the exit code. */
  int waitFor(long seconds) throws InterruptedException {
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("the command did not exit within " + seconds + " s; stderr: " + text(err));
    }
    return process.exitValue();
  }

  String stdout() {
    return text(out);
  }

  String stderr() {
    return text(err);
  }

  List<String> stderrLines() {
    try {
      return Files.readAllLines(err);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  static String text(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  File errFile() {
    return err.toFile();
  }
}
