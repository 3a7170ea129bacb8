package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Micrometer is optional: a user without it on the class path builds and runs the outbox, the relay and a consumer
 * as before. Proven in a child JVM started with this test's class path minus Micrometer and its dependencies.
 */
@HandoffTest
class WithoutMicrometerTest {

  private final TestEnvironment env;

  WithoutMicrometerTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void outboxRelayAndConsumerRunWithoutMicrometerOnTheClassPath() throws Exception {
    List<String> classPath = Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator));
    // Else the test proves nothing.
    assertThat(classPath).anyMatch(WithoutMicrometerTest::micrometer);
    String withoutMicrometer = classPath.stream().filter(e -> !micrometer(e))
        .collect(Collectors.joining(File.pathSeparator));

    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", withoutMicrometer,
        WithoutMicrometerMain.class.getName(),
        env.postgres().jdbcUrl(), env.postgres().user(), String.valueOf(env.postgres().password()), env.schema(), env.keyPrefix(),
        env.redisUri().toString(), "plain"));
    Path out = Files.createTempFile("without-micrometer", ".out");
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("the child JVM did not finish within 60 s: " + Files.readString(out));
      }
      String output = Files.readString(out);
      assertThat(p.exitValue()).as(output).isZero();
      assertThat(output).contains("micrometer=absent", "published=3", "handled=3");
    } finally {
      Files.deleteIfExists(out);
    }
  }

  private static boolean micrometer(String entry) {
    String e = entry.replace('\\', '/');
    return e.contains("/io/micrometer/") || e.contains("/org/hdrhistogram/") || e.contains("/org/latencyutils/");
  }
}
