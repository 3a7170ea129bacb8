package dev.handoff.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** {@code handoff.jar} as a separate JVM for the tests: the same main class, on the tests' class path. */
final class HandoffProcess {

  private HandoffProcess() {}

  /** A process builder for {@code handoff <args>}. */
  static ProcessBuilder builder(String... args) {
    // A short-lived JVM: the C1 compiler and the serial collector start it fastest.
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", System.getProperty("java.class.path"), HandoffCommand.class.getName()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command);
  }

  /** A process builder for {@code handoff relay <args>}. */
  static ProcessBuilder relay(String... args) {
    List<String> all = new ArrayList<>(List.of("relay"));
    all.addAll(List.of(args));
    return builder(all.toArray(String[]::new));
  }
}
