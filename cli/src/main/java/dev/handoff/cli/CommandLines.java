package dev.handoff.cli;

import java.lang.reflect.Field;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * What every handoff command line shares: durations as {@code 10s}, {@code 500ms}, {@code 2m} or ISO-8601
 * {@code PT10S}; a usage error as one line and a pointer to {@code --help}, exit 2; a failure as one line, exit 2,
 * with the options' names where a builder named its field ({@code --batch-size}, not {@code batchSize}) and no
 * password.
 */
public final class CommandLines {

  /** The exit code of a usage error and of a failure the user can fix (a URL, a server, a schema). */
  public static final int USAGE_OR_SETUP_ERROR = 2;

  private static final Pattern SHORT_DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

  private CommandLines() {}

  /**
   * Sets {@code cli} up as described in the class comment. {@code describe} turns a failure into its one line (the
   * caller's own wording of its exceptions); the option names and the masking are applied to what it returns.
   */
  public static CommandLine configure(CommandLine cli, String tool, Function<Throwable, String> describe) {
    cli.registerConverter(Duration.class, CommandLines::duration);
    cli.setParameterExceptionHandler((e, args) -> {
      CommandLine failed = e.getCommandLine();
      failed.getErr().println(tool + ": " + Connections.mask(firstLine(e.getMessage())) + " (see "
          + failed.getCommandSpec().qualifiedName() + " --help)");
      failed.getErr().flush();
      return USAGE_OR_SETUP_ERROR;
    });
    cli.setExecutionExceptionHandler((e, line, parsed) -> {
      String text = withOptionNames(firstLine(describe.apply(e)), line.getCommandSpec());
      line.getErr().println(tool + ": " + Connections.mask(text));
      line.getErr().flush();
      return USAGE_OR_SETUP_ERROR;
    });
    return cli;
  }

  /**
   * Reads a duration: a whole number with {@code ms}, {@code s}, {@code m}, {@code h} or {@code d}, or ISO-8601.
   *
   * @throws CommandLine.TypeConversionException naming the accepted forms
   */
  public static Duration duration(String text) {
    String t = text == null ? "" : text.strip();
    Matcher m = SHORT_DURATION.matcher(t.toLowerCase(Locale.ROOT));
    try {
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        };
      }
      return Duration.parse(t);
    } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
      throw new CommandLine.TypeConversionException(
          "'" + text + "' is not a duration: expected a number with ms, s, m, h or d (500ms, 10s, 2m) or ISO-8601"
              + " (PT10S)");
    }
  }

  /**
   * {@code message} with each of the command's option fields named by its option: builders validate their own
   * settings and name them as fields, which a command-line user never typed.
   */
  static String withOptionNames(String message, CommandSpec spec) {
    String out = message;
    for (OptionSpec option : spec.options()) {
      // Only camelCase names: a one-word field (schema, migrate) is also an English word in messages.
      if (option.userObject() instanceof Field field && !field.getName().equals(field.getName().toLowerCase(
          Locale.ROOT))) {
        out = out.replaceAll("(?<![\\w-])" + Pattern.quote(field.getName()) + "(?![\\w-])",
            Matcher.quoteReplacement(option.longestName()));
      }
    }
    return out;
  }

  static String firstLine(String message) {
    if (message == null || message.isBlank()) {
      return "no details";
    }
    String m = message.strip();
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl).strip();
  }
}
