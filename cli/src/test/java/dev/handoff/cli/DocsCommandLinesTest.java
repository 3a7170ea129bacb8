package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every {@code handoff} command line in the README and the docs is parsed by the CLI itself, so that a page cannot
 * show an option that does not exist, miss a required one, or name a command that is gone. Command lines are those
 * of code blocks ({@code java -jar .../handoff.jar ...}, continuation lines joined) and inline code that starts with
 * {@code handoff <command>}. A placeholder in capitals ({@code T}, {@code TIME}, {@code N}) stands for a value; a
 * line with {@code ...} is an excerpt, and only its command and options are checked, not what is required.
 */
class DocsCommandLinesTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern BLOCK_LINE =
      Pattern.compile("^\\s*(?:\\$ )?java -jar \\S*handoff\\.jar (.*)$");
  private static final Pattern INLINE = Pattern.compile("`(?:java -jar \\S*handoff\\.jar|handoff) ([a-z][^`]*)`");
  private static final Pattern PLACEHOLDER = Pattern.compile("[A-Z][A-Z_]*");
  private static final Map<String, String> VALUES = Map.of("TIME", "1h", "N", "1", "ID", "1");

  private record Line(String where, List<String> args, boolean excerpt) {}

  @Test
  void everyCommandLineInTheDocsParses() throws IOException {
    List<Line> lines = new ArrayList<>();
    for (Path page : pages()) {
      lines.addAll(commandLines(page));
    }
    List<String> refused = new ArrayList<>();
    for (Line line : lines) {
      String problem = problem(line);
      if (problem != null) {
        refused.add(line.where() + ": handoff " + String.join(" ", line.args()) + " -> " + problem);
      }
    }

    assertThat(lines).as("command lines found").hasSizeGreaterThan(30);
    assertThat(refused).isEmpty();
  }

  private static String problem(Line line) {
    CommandLine cli = HandoffCommand.commandLine();
    try {
      CommandLine.ParseResult parsed = cli.parseArgs(line.args().toArray(String[]::new));
      if (!parsed.hasSubcommand()) {
        return "no such command";
      }
      return null;
    } catch (CommandLine.MissingParameterException e) {
      return line.excerpt() || !line.args().stream().anyMatch(a -> a.startsWith("--")) ? null : e.getMessage();
    } catch (CommandLine.ParameterException e) {
      if (e.getMessage().startsWith("Missing required subcommand") && line.args().size() == 1) {
        return null; // a command group named in prose ("handoff dlq")
      }
      return e.getMessage();
    }
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

  private static List<Line> commandLines(Path page) throws IOException {
    List<String> text = Files.readAllLines(page);
    List<Line> out = new ArrayList<>();
    String name = ROOT.relativize(page).toString();
    boolean inBlock = false;
    for (int i = 0; i < text.size(); i++) {
      String raw = text.get(i);
      if (raw.stripLeading().startsWith("```")) {
        inBlock = !inBlock;
        continue;
      }
      if (inBlock) {
        Matcher m = BLOCK_LINE.matcher(raw);
        if (m.matches()) {
          StringBuilder command = new StringBuilder(m.group(1));
          int first = i;
          while (command.toString().stripTrailing().endsWith("\\") && i + 1 < text.size()) {
            String s = command.toString().stripTrailing();
            command = new StringBuilder(s.substring(0, s.length() - 1)).append(' ').append(text.get(++i).strip());
          }
          out.add(line(name + ":" + (first + 1), withoutComment(command.toString())));
        }
        continue;
      }
      Matcher m = INLINE.matcher(raw);
      while (m.find()) {
        String span = m.group(1);
        if (!span.contains("[") && !span.contains("|") && !span.contains("<")) {
          out.add(line(name + ":" + (i + 1), span));
        }
      }
    }
    return out;
  }

  private static String withoutComment(String command) {
    int hash = command.indexOf(" #");
    return hash < 0 ? command : command.substring(0, hash);
  }

  private static Line line(String where, String command) {
    List<String> args = new ArrayList<>();
    boolean excerpt = false;
    for (String token : tokens(command)) {
      if (token.equals("...") || token.equals("…")) {
        excerpt = true;
      } else if (PLACEHOLDER.matcher(token).matches()) {
        args.add(VALUES.getOrDefault(token, "x"));
      } else {
        args.add(token);
      }
    }
    return new Line(where, args, excerpt);
  }

  /** Splits like a shell: whitespace, with single and double quotes kept together and removed. */
  private static List<String> tokens(String command) {
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    char quote = 0;
    boolean any = false;
    for (char c : command.strip().toCharArray()) {
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          current.append(c);
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
        any = true;
      } else if (Character.isWhitespace(c)) {
        if (any || current.length() > 0) {
          out.add(current.toString());
          current.setLength(0);
          any = false;
        }
      } else {
        current.append(c);
      }
    }
    if (any || current.length() > 0) {
      out.add(current.toString());
    }
    return out;
  }
}
