package dev.handoff.outbox.internal;

import java.time.Duration;
import java.util.Objects;

/** The checks the outbox's and the relay's settings share, each failing with a line that names the setting. */
public final class Settings {

  private Settings() {}

  /** Refuses a missing, zero or negative {@code value} of the setting {@code name}. */
  public static void requirePositive(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
  }
}
