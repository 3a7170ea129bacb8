package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
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
 * Every Java example of the documentation is code that the suite compiles and runs. Each {@code ```java} block of
 * README.md, docs/*.md and the modules' READMEs has, on the line right before it, a marker naming the test source
 * that runs it:
 *
 * <pre>{@code
 * <!-- run by: end-to-end/src/test/java/dev/handoff/consumer/StrictModeTest.java -->
 * }</pre>
 *
 * <p>That file must be a test source (a module's {@code src/test/java}, or an {@code examples/*} module's sources,
 * which its own tests run), and every code line of the block must be a line of that file, in the same order, other
 * lines allowed in between (lines are compared trimmed; blank lines, comment lines and trailing {@code //} comments
 * do not count, so {@code // ...} stands for code the example leaves out). A block without a marker, a marker naming
 * anything else, or a line the file does not have fails this test with the page and line.
 */
class DocExamplesTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).resolve("..").normalize();
  private static final Pattern FENCE = Pattern.compile("^\\s*(`{3,}|~{3,})\\s*([^`\\s]*).*$");
  private static final Pattern MARKER = Pattern.compile("^<!-- run by: (\\S+) -->$");
  private static final Pattern RUNNABLE_SOURCE =
      Pattern.compile("(?:[a-z0-9-]+/src/test/java|examples/[a-z0-9-]+/src/(?:main|test)/java)/[\\w/]+\\.java");

  /** A {@code ```java} block: the page, the line of its opening fence, the marker's path (or null), its code. */
  record Block(String page, int line, String runBy, List<Code> code) {}

  /** A code line of a page or a source: its number (from 1) and its text, trimmed and without a comment. */
  record Code(int number, String text) {}

  @Test
  void everyJavaBlockOfTheDocsIsRunByTheTestItNames() throws IOException {
    List<String> problems = new ArrayList<>();
    int blocks = 0;
    for (String page : pages()) {
      for (Block block : javaBlocks(page, Files.readString(ROOT.resolve(page), StandardCharsets.UTF_8))) {
        blocks++;
        problems.addAll(problems(block));
      }
    }
    assertThat(problems).as("java blocks of the docs that no test is shown to run").isEmpty();
    assertThat(blocks).as("java blocks found").isGreaterThanOrEqualTo(23);
  }

  @Test
  void aBlockWithoutAMarkerIsReportedWithItsPageAndLine() {
    String page = "# Title\n\nText.\n\n```java\nint x = 1;\n```\n";

    List<Block> blocks = javaBlocks("docs/new.md", page);

    assertThat(blocks).containsExactly(new Block("docs/new.md", 5, null, List.of(new Code(6, "int x = 1;"))));
    assertThat(problems(blocks.get(0))).containsExactly("docs/new.md:5: a ```java block without a marker on the"
        + " line before it naming the test that runs it: <!-- run by: <module>/src/test/java/.../SomeTest.java -->");
  }

  @Test
  void aMarkerMustNameATestSourceThatExists() {
    List<Code> code = List.of(new Code(10, "x();"));
    Block main = new Block("README.md", 9, "outbox/src/main/java/dev/handoff/outbox/Outbox.java", code);
    Block gone = new Block("README.md", 9, "outbox/src/test/java/dev/handoff/outbox/GoneTest.java", code);

    assertThat(problems(main)).containsExactly("README.md:9: the marker names"
        + " outbox/src/main/java/dev/handoff/outbox/Outbox.java, which is not a test source (a module's"
        + " src/test/java, or an examples/* module's src/main/java or src/test/java)");
    assertThat(problems(gone)).containsExactly(
        "README.md:9: the marker names outbox/src/test/java/dev/handoff/outbox/GoneTest.java, which does not exist");
  }

  @Test
  void aLineTheTestDoesNotHaveInThatOrderIsReported() {
    String test = "end-to-end/src/test/java/dev/handoff/consumer/StrictModeTest.java";
    Code declaration = new Code(2, "class StrictModeTest {");
    Code strict = new Code(3, "DataSource appData = ConsumerTestKit.strict(dataSource);");
    Block inOrder = new Block("consumer/README.md", 1, test, List.of(declaration, strict));
    Block reversed = new Block("consumer/README.md", 1, test, List.of(strict, declaration));

    assertThat(problems(inOrder)).isEmpty();
    assertThat(problems(reversed)).containsExactly("consumer/README.md:2: line 'class StrictModeTest {' is not in "
        + test + " after the block's previous lines");
  }

  @Test
  void commentsAndBlankLinesDoNotCountButEllipsesDo() {
    String page = "<!-- run by: a/src/test/java/A.java -->\n```java\n"
        + "a(); // says a\n\n// a comment\n  b();\n...\n```\n~~~java\nnot(); // a block without a marker\n~~~\n";

    assertThat(javaBlocks("p.md", page)).containsExactly(
        new Block("p.md", 2, "a/src/test/java/A.java",
            List.of(new Code(3, "a();"), new Code(6, "b();"), new Code(7, "..."))),
        new Block("p.md", 9, null, List.of(new Code(10, "not();"))));
  }

  /** README.md, docs/*.md and the modules' READMEs (one level down, and examples/*). */
  private static List<String> pages() throws IOException {
    List<String> pages = new ArrayList<>();
    pages.add("README.md");
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.map(p -> "docs/" + p.getFileName()).filter(p -> p.endsWith(".md")).sorted().forEach(pages::add);
    }
    for (Path parent : List.of(ROOT, ROOT.resolve("examples"))) {
      try (Stream<Path> modules = Files.list(parent)) {
        modules.filter(m -> Files.isRegularFile(m.resolve("README.md")))
            .map(m -> ROOT.relativize(m.resolve("README.md")).toString().replace('\\', '/'))
            .sorted().forEach(pages::add);
      }
    }
    assertThat(pages).contains("README.md", "docs/operations.md", "consumer/README.md");
    return pages;
  }

  /** The {@code ```java} blocks of {@code text}, in page order. */
  static List<Block> javaBlocks(String page, String text) {
    List<Block> out = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      Matcher open = FENCE.matcher(lines[i]);
      if (!open.matches()) {
        continue;
      }
      String fence = open.group(1);
      boolean java = open.group(2).equalsIgnoreCase("java");
      List<Code> body = new ArrayList<>();
      int start = i;
      for (i++; i < lines.length && !lines[i].strip().startsWith(fence); i++) {
        String code = code(lines[i]);
        if (code != null) {
          body.add(new Code(i + 1, code));
        }
      }
      if (java) {
        Matcher marker = start > 0 ? MARKER.matcher(lines[start - 1].strip()) : null;
        out.add(new Block(page, start + 1, marker != null && marker.matches() ? marker.group(1) : null, body));
      }
    }
    return out;
  }

  /** What is wrong with {@code block}: nothing, or one line naming the page and line. */
  static List<String> problems(Block block) {
    String at = block.page() + ":" + block.line() + ": ";
    if (block.runBy() == null) {
      return List.of(at + "a ```java block without a marker on the line before it naming the test that runs it:"
          + " <!-- run by: <module>/src/test/java/.../SomeTest.java -->");
    }
    if (!RUNNABLE_SOURCE.matcher(block.runBy()).matches()) {
      return List.of(at + "the marker names " + block.runBy() + ", which is not a test source (a module's"
          + " src/test/java, or an examples/* module's src/main/java or src/test/java)");
    }
    Path source = ROOT.resolve(block.runBy());
    if (!Files.isRegularFile(source)) {
      return List.of(at + "the marker names " + block.runBy() + ", which does not exist");
    }
    if (block.code().isEmpty()) {
      return List.of(at + "the block has no code");
    }
    List<String> test = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(source, StandardCharsets.UTF_8)) {
        String code = code(line);
        if (code != null) {
          test.add(code);
        }
      }
    } catch (IOException e) {
      return List.of(at + "cannot read " + block.runBy() + ": " + e);
    }
    int next = 0;
    for (Code line : block.code()) {
      int found = test.subList(next, test.size()).indexOf(line.text());
      if (found < 0) {
        return List.of(block.page() + ":" + line.number() + ": line '" + line.text() + "' is not in "
            + block.runBy() + (line == block.code().get(0) ? "" : " after the block's previous lines"));
      }
      next += found + 1;
    }
    return List.of();
  }

  /** The line trimmed, without a trailing {@code //} comment; null for a blank or comment line. */
  private static String code(String line) {
    int comment = line.indexOf(" //");
    String code = (comment >= 0 ? line.substring(0, comment) : line).strip();
    return code.isEmpty() || code.startsWith("//") ? null : code;
  }
}
