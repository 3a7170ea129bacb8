package dev.handoff.ledger.bench;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How producers write: {@code sessions} threads, each committing transactions of {@code perTransaction} payments.
 * {@code 32x1} is how a web service appends (one request, one transaction, one payment); {@code 4x10} a batch job.
 */
public record Shape(int sessions, int perTransaction) {

  private static final Pattern FORM = Pattern.compile("(\\d+)x(\\d+)");

  public Shape {
    if (sessions < 1 || perTransaction < 1) {
      throw new IllegalArgumentException("--shapes: sessions and payments per transaction must be >= 1, were "
          + sessions + "x" + perTransaction);
    }
  }

  /** Parses {@code <sessions>x<payments per transaction>}, such as {@code 32x1}. */
  public static Shape parse(String text) {
    Matcher m = FORM.matcher(text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("--shapes: expected <sessions>x<payments per transaction> such as 32x1,"
          + " was '" + text + "'");
    }
    return new Shape(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
  }

  @Override
  public String toString() {
    return sessions + "x" + perTransaction;
  }
}
