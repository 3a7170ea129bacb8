package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The libraries' production code never names a test type: the test kits' packages hold what tests use, and the code
 * outside them calls no-op hooks whose effect is the test's business (issue 28's seams). And a service that only
 * appends gets no Flyway: the outbox module names none and keeps it out of its run time.
 */
class ProductionSourcesTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).resolve("..");
  private static final List<String> LIBRARIES = List.of("migrations", "outbox", "consumer", "cli",
      "spring-boot-autoconfigure");

  @Test
  void noLibraryClassOutsideATestKitNamesATestKitOrTheTestHarness() throws IOException {
    List<String> offenders = productionSources()
        .filter(p -> !p.toString().contains("/testkit/"))
        .filter(p -> {
          String text = read(p);
          return text.contains(".testkit.") || text.contains("dev.handoff.testing") || text.contains("SimulatedCrash");
        })
        .map(p -> ROOT.relativize(p).toString())
        .toList();
    assertThat(offenders).isEmpty();
  }

  @Test
  void theProducersModuleNamesNoFlywayAndLeavesItOutOfItsRunTime() throws IOException {
    try (Stream<Path> files = Files.walk(ROOT.resolve("outbox/src/main/java"))) {
      List<String> naming = files.filter(p -> p.toString().endsWith(".java"))
          .filter(p -> read(p).contains("org.flywaydb") || read(p).contains("HandoffMigrations.migrate"))
          .map(p -> ROOT.relativize(p).toString()).toList();
      assertThat(naming).isEmpty();
    }
    String pom = read(ROOT.resolve("outbox/pom.xml")).replaceAll("\\s+", "");
    assertThat(pom).contains("<artifactId>handoff-migrations</artifactId><exclusions><exclusion>"
        + "<groupId>org.flywaydb</groupId><artifactId>*</artifactId></exclusion></exclusions>");
  }

  private static Stream<Path> productionSources() throws IOException {
    Stream<Path> all = Stream.empty();
    for (String module : LIBRARIES) {
      Path main = ROOT.resolve(module).resolve("src/main/java");
      assertThat(main).isDirectory();
      try (Stream<Path> files = Files.walk(main)) {
        List<Path> java = files.filter(p -> p.toString().endsWith(".java")).toList();
        all = Stream.concat(all, java.stream());
      }
    }
    return all;
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
