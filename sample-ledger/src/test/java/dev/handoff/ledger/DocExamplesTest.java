package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The Java examples of consumer/README.md that a test runs: every line of each example is a line of that test, in
 * the same order (comments aside), so the page cannot show code the suite does not compile and run.
 */
class DocExamplesTest {

  private static final Path ROOT = Path.of("..");

  @Test
  void theVerificationExampleIsTheBodyOfTheTestThatRunsIt() throws IOException {
    assertRunBy(example("consumer/README.md", "A verification test of a service that charges once per payment"),
        "sample-ledger/src/test/java/dev/handoff/ledger/ReplayVerificationExampleTest.java");
  }

  @Test
  void theStrictModeExampleIsALineOfTheStrictModeTest() throws IOException {
    assertRunBy(example("consumer/README.md", "**Strict mode.**"),
        "consumer/src/test/java/dev/handoff/consumer/StrictModeTest.java");
  }

  /** The first java block after {@code marker} in {@code page}, as code lines. */
  private static List<String> example(String page, String marker) throws IOException {
    String text = Files.readString(ROOT.resolve(page), StandardCharsets.UTF_8);
    int at = text.indexOf(marker);
    assertThat(at).as("'%s' in %s", marker, page).isNotNegative();
    int start = text.indexOf("```java\n", at) + "```java\n".length();
    int end = text.indexOf("```", start);
    return code(text.substring(start, end));
  }

  private static void assertRunBy(List<String> example, String testSource) throws IOException {
    List<String> test = code(Files.readString(ROOT.resolve(testSource), StandardCharsets.UTF_8));
    int next = 0;
    for (String line : example) {
      int found = test.subList(next, test.size()).indexOf(line);
      assertThat(found).as("example line '%s' in %s, in order", line, testSource).isNotNegative();
      next += found + 1;
    }
    assertThat(example).isNotEmpty();
  }

  /** Non-blank lines, trimmed, with a trailing {@code //} comment removed. */
  private static List<String> code(String text) {
    List<String> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      int comment = line.indexOf(" //");
      String code = (comment >= 0 ? line.substring(0, comment) : line).strip();
      if (!code.isEmpty() && !code.startsWith("//")) {
        out.add(code);
      }
    }
    return out;
  }
}
