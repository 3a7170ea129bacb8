package dev.handoff.benchmarks.ledger;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How producers write: {@code processes} JVMs of {@code sessions} threads each, every thread committing
 * transactions of {@code perTransaction} payments. {@code 32x1} is how a web service appends (one request, one
 * transaction, one payment); {@code 8x8x1} eight such service instances of eight sessions; {@code 4x10} a batch job.
 */
public record Shape(int processes, int sessions, int perTransaction) {

  private static final Pattern FORM = Pattern.compile("(?:(\\d+)x)?(\\d+)x(\\d+)");

  public Shape {
    if (processes < 1 || sessions < 1 || perTransaction < 1) {
      throw new IllegalArgumentException("--shapes: processes, sessions and payments per transaction must be >= 1,"
          + " were " + processes + "x" + sessions + "x" + perTransaction);
    }
  }

  /**
   * Parses {@code <sessions>x<payments per transaction>}, such as {@code 32x1}, or
   * {@code <processes>x<sessions>x<payments per transaction>}, such as {@code 8x8x1}.
   */
  public static Shape parse(String text) {
    Matcher m = FORM.matcher(text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("--shapes: expected [<processes>x]<sessions>x<payments per transaction>"
          + " such as 32x1 or 8x8x1, was '" + text + "'");
    }
    return new Shape(m.group(1) == null ? 1 : Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
        Integer.parseInt(m.group(3)));
  }

  /** Sessions in all processes together. */
  int totalSessions() {
    return processes * sessions;
  }

  /** In words, for the log: {@code 8 process(es) x 8 session(s) x 1 payment(s)/tx}. */
  String describe() {
    return (processes > 1 ? processes + " process(es) x " : "") + sessions + " session(s) x " + perTransaction
        + " payment(s)/tx";
  }

  @Override
  public String toString() {
    return (processes > 1 ? processes + "x" : "") + sessions + "x" + perTransaction;
  }
}
