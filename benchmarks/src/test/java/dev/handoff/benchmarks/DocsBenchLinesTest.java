package dev.handoff.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every {@code java -jar .../handoff-benchmarks.jar ...} line of the README and the docs is parsed by the benchmarks'
 * command line, so that a page cannot show a bench option that does not exist (as cli's DocsCommandLinesTest does
 * for handoff.jar).
 */
class DocsBenchLinesTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).resolve("..").normalize();
  private static final Pattern LINE = Pattern.compile("java -jar \\S*handoff-benchmarks\\.jar ([^`#]*)");

  @Test
  void everyBenchCommandLineInTheDocsParses() throws IOException {
    List<String> found = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    for (Path page : pages()) {
      List<String> lines = Files.readAllLines(page);
      for (int i = 0; i < lines.size(); i++) {
        Matcher m = LINE.matcher(lines.get(i));
        while (m.find()) {
          String where = ROOT.relativize(page) + ":" + (i + 1);
          found.add(where);
          String[] args = m.group(1).strip().split("\\s+");
          try {
            CommandLine.ParseResult parsed = new CommandLine(new BenchmarksCli()).parseArgs(args);
            if (!parsed.hasSubcommand()) {
              refused.add(where + ": no command");
            }
          } catch (CommandLine.ParameterException e) {
            refused.add(where + ": " + e.getMessage());
          }
        }
      }
    }
    assertThat(found).as("bench command lines in the docs").hasSizeGreaterThanOrEqualTo(4);
    assertThat(refused).isEmpty();
  }

  private static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    try (Stream<Path> modules = Files.list(ROOT)) {
      modules.map(m -> m.resolve("README.md")).filter(Files::isRegularFile).sorted().forEach(pages::add);
    }
    return pages;
  }
}
