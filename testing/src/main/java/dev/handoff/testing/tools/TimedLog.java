package dev.handoff.testing.tools;

import java.io.PrintWriter;

/**
 * Progress lines, each after the seconds since this log was made, flushed at once so that a long run shows where it
 * is. Thread-safe: its lines never interleave.
 */
public final class TimedLog {

  private final PrintWriter out;
  private final int secondsWidth;
  private final long started = System.nanoTime();

  /** @param secondsWidth the width of the seconds column, the decimal point and one decimal included */
  public TimedLog(PrintWriter out, int secondsWidth) {
    this.out = out;
    this.secondsWidth = secondsWidth;
  }

  /** One line: the seconds so far, then {@code format} formatted with {@code args}. */
  public synchronized void event(String format, Object... args) {
    out.printf("%" + secondsWidth + ".1fs  %s%n", (System.nanoTime() - started) / 1e9, String.format(format, args));
    out.flush();
  }

  /** A line without the seconds, as {@link PrintWriter#printf}: a summary that scripts read. */
  public synchronized void printf(String format, Object... args) {
    out.printf(format, args);
  }
}
