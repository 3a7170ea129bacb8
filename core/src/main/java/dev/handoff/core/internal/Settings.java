package dev.handoff.core.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * The checks that handoff's settings and messages share, each failing with a line that names the setting, and the
 * way a refused value is quoted in that line.
 */
public final class Settings {

  private Settings() {}

  /** Refuses a missing, zero or negative {@code value} of the setting {@code name}. */
  public static void requirePositive(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
  }

  /** A refused value as an error line quotes it: whole up to 120 characters, cut with "..." beyond. */
  public static String abbreviate(String value) {
    return value.length() <= 120 ? value : value.substring(0, 117) + "...";
  }
}
