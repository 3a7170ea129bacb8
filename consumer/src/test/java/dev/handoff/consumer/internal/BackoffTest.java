package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BackoffTest {

  private static final int SAMPLES = 1_000;

  private final Backoff defaults = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30));

  @Test
  void eachDelayLiesBetweenHalfAndAllOfInitialDoubledPerEarlierAttempt() {
    long[] bounds = {1_000, 2_000, 4_000, 8_000, 16_000};
    for (int attempt = 1; attempt <= bounds.length; attempt++) {
      long bound = bounds[attempt - 1];
      assertThat(samples(defaults, attempt)).as("attempt %d", attempt).allSatisfy(delay ->
          assertThat(delay).isBetween(bound / 2, bound));
    }
  }

  @Test
  void delaysOfLaterAttemptsAreCappedAtMaxBackoff() {
    for (long attempt : new long[] {6, 10, 31, 32, 64, 1_000, Long.MAX_VALUE}) {
      assertThat(samples(defaults, attempt)).as("attempt %d", attempt).allSatisfy(delay ->
          assertThat(delay).isBetween(15_000L, 30_000L));
    }
  }

  @Test
  void theCapNeedNotBeAPowerOfTwoOfTheInitialBackoff() {
    Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofMillis(250));
    assertThat(samples(backoff, 1)).allSatisfy(delay -> assertThat(delay).isBetween(50L, 100L));
    assertThat(samples(backoff, 2)).allSatisfy(delay -> assertThat(delay).isBetween(100L, 200L));
    assertThat(samples(backoff, 3)).allSatisfy(delay -> assertThat(delay).isBetween(125L, 250L));
  }

  @Test
  void delaysAreJittered() {
    assertThat(samples(defaults, 1).stream().distinct().count()).isGreaterThan(1);
    assertThat(samples(defaults, 20).stream().distinct().count()).isGreaterThan(1);
  }

  private static List<Long> samples(Backoff backoff, long attempt) {
    List<Long> out = new ArrayList<>(SAMPLES);
    for (int i = 0; i < SAMPLES; i++) {
      out.add(backoff.after(attempt).toMillis());
    }
    return out;
  }
}
