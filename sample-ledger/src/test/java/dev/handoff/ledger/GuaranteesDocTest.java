package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/guarantees.md names, for each claim, the test method that proves it: every one it names must be a test method
 * (not a helper of the same name), so that a renamed or deleted test cannot leave a claim pointing at nothing.
 */
class GuaranteesDocTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).resolve("..").normalize();
  private static final Pattern REFERENCE = Pattern.compile("`(\\w+Test)#(\\w+)`");

  @Test
  void everyTestTheGuaranteesCiteExists() throws IOException {
    String doc = Files.readString(ROOT.resolve("docs/guarantees.md"), StandardCharsets.UTF_8);
    Matcher m = REFERENCE.matcher(doc);
    List<String> cited = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    while (m.find()) {
      cited.add(m.group(1) + "#" + m.group(2));
      String method = m.group(2);
      if (testSources(m.group(1)).stream().noneMatch(source -> declares(source, method))) {
        missing.add(m.group(1) + "#" + m.group(2));
      }
    }
    assertThat(cited).as("test references in docs/guarantees.md").hasSizeGreaterThan(50);
    assertThat(missing).as("cited in docs/guarantees.md but not found in any module's tests").isEmpty();
  }

  /** The test sources of that name in every module (two modules may each have one). */
  private static List<Path> testSources(String className) throws IOException {
    try (Stream<Path> files = Files.walk(ROOT)) {
      return files.filter(p -> p.toString().contains("/src/test/java/") && !p.toString().contains("/target/"))
          .filter(p -> p.getFileName().toString().equals(className + ".java")).toList();
    }
  }

  private static boolean declares(Path source, String method) {
    try {
      // A test method: @Test or @ParameterizedTest, maybe more annotations, then the method (never a helper).
      return Pattern.compile("@(?:Test|ParameterizedTest)\\b(?:\\([^)]*\\))?\\s+(?:@[\\w.]+(?:\\([^)]*\\))?\\s+)*"
          + "void " + method + "\\(").matcher(Files.readString(source)).find();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
