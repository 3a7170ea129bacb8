package dev.handoff.core.internal;

import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;

/**
 * {@link Instant#toString()} and {@link Instant#parse} for the stream entry's {@code created_at}, without the
 * general formatter: the relay writes, and every consumer reads, one per message, and the formatter was the largest
 * part of a consumer's own CPU per message (docs/performance.md). The text is the same character for character, and
 * anything outside the shape written here (years 0 to 9999, {@code Z}) goes to the JDK's own methods, so a text is
 * accepted, refused and read exactly as {@link Instant#parse} does.
 */
public final class InstantText {

  private static final long SECONDS_PER_DAY = 86_400;
  private static final long YEAR_0 = LocalDate.of(0, 1, 1).toEpochDay() * SECONDS_PER_DAY;
  private static final long YEAR_10000 = LocalDate.of(10_000, 1, 1).toEpochDay() * SECONDS_PER_DAY;
  private static final int[] FRACTION_SCALE = {0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100,
      10, 1};

  private InstantText() {}

  /** {@code instant.toString()}. */
  public static String format(Instant instant) {
    long seconds = instant.getEpochSecond();
    if (seconds < YEAR_0 || seconds >= YEAR_10000) {
      return instant.toString();
    }
    LocalDate date = LocalDate.ofEpochDay(Math.floorDiv(seconds, SECONDS_PER_DAY));
    int ofDay = (int) Math.floorMod(seconds, SECONDS_PER_DAY);
    int nanos = instant.getNano();
    byte[] out = new byte[31];
    digits(out, 0, date.getYear(), 4);
    out[4] = '-';
    digits(out, 5, date.getMonthValue(), 2);
    out[7] = '-';
    digits(out, 8, date.getDayOfMonth(), 2);
    out[10] = 'T';
    digits(out, 11, ofDay / 3600, 2);
    out[13] = ':';
    digits(out, 14, ofDay / 60 % 60, 2);
    out[16] = ':';
    digits(out, 17, ofDay % 60, 2);
    int end = 19;
    // As ISO_INSTANT prints it: no fraction when whole, else as few groups of three digits as hold it exactly.
    if (nanos != 0) {
      out[end++] = '.';
      if (nanos % 1_000_000 == 0) {
        digits(out, end, nanos / 1_000_000, 3);
        end += 3;
      } else if (nanos % 1_000 == 0) {
        digits(out, end, nanos / 1_000, 6);
        end += 6;
      } else {
        digits(out, end, nanos, 9);
        end += 9;
      }
    }
    out[end++] = 'Z';
    return new String(out, 0, end, StandardCharsets.ISO_8859_1);
  }

  /**
   * {@code Instant.parse(text)}.
   *
   * @throws java.time.format.DateTimeParseException as {@link Instant#parse} throws it
   */
  public static Instant parse(CharSequence text) {
    Instant fast = parseZulu(text);
    return fast != null ? fast : Instant.parse(text);
  }

  /** {@code yyyy-MM-ddTHH:mm:ss[.f{1,9}]Z} with a valid date and time, or null for anything else. */
  private static Instant parseZulu(CharSequence t) {
    int n = t.length();
    if (n < 20 || n > 30 || t.charAt(n - 1) != 'Z' || t.charAt(4) != '-' || t.charAt(7) != '-'
        || t.charAt(10) != 'T' || t.charAt(13) != ':' || t.charAt(16) != ':') {
      return null;
    }
    int year = number(t, 0, 4);
    int month = number(t, 5, 2);
    int day = number(t, 8, 2);
    int hour = number(t, 11, 2);
    int minute = number(t, 14, 2);
    int second = number(t, 17, 2);
    if ((year | month | day | hour | minute | second) < 0 || hour > 23 || minute > 59 || second > 59) {
      return null;
    }
    int nanos = 0;
    if (n > 20) {
      int fractionDigits = n - 21;
      if (t.charAt(19) != '.' || fractionDigits < 1) {
        return null;
      }
      int fraction = number(t, 20, fractionDigits);
      if (fraction < 0) {
        return null;
      }
      nanos = fraction * FRACTION_SCALE[fractionDigits];
    }
    long epochDay;
    try {
      epochDay = LocalDate.of(year, month, day).toEpochDay();
    } catch (DateTimeException e) {
      return null; // an impossible date: Instant.parse says why
    }
    return Instant.ofEpochSecond(epochDay * SECONDS_PER_DAY + hour * 3600L + minute * 60L + second, nanos);
  }

  /** The ASCII digits at {@code [from, from + count)} as a number, or -1 if any is not one. */
  private static int number(CharSequence t, int from, int count) {
    int value = 0;
    for (int i = from; i < from + count; i++) {
      char c = t.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  private static void digits(byte[] out, int at, int value, int width) {
    for (int i = at + width - 1; i >= at; i--) {
      out[i] = (byte) ('0' + value % 10);
      value /= 10;
    }
  }
}
