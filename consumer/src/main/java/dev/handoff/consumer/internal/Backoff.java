package dev.handoff.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Exponential backoff with "equal jitter": between half and all of {@code initial x 2^(n-1)}, capped. */
final class Backoff {

  private final long initialMillis;
  private final long maxMillis;

  Backoff(Duration initial, Duration max) {
    this.initialMillis = Math.max(1, initial.toMillis());
    this.maxMillis = Math.max(initialMillis, max.toMillis());
  }

  /** The backoff after the {@code attempt}-th failure (1-based). */
  Duration after(long attempt) {
    int shift = (int) Math.min(30, Math.max(0, attempt - 1));
    long full = Math.min(maxMillis, initialMillis << shift);
    // Jitter spreads the retries of a batch that failed together (a database blip) instead of replaying the herd.
    long half = full / 2;
    return Duration.ofMillis(half + ThreadLocalRandom.current().nextLong(full - half + 1));
  }
}
