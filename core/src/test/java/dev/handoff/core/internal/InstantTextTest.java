package dev.handoff.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link InstantText} must be indistinguishable from {@link Instant#toString()} and {@link Instant#parse}: the stream
 * entry's {@code created_at} is written by one version of handoff and read by another.
 */
class InstantTextTest {

  private static final long YEAR_0 = Instant.parse("0000-01-01T00:00:00Z").getEpochSecond();
  private static final long YEAR_10000 = Instant.parse("+10000-01-01T00:00:00Z").getEpochSecond();

  @Test
  void formatsAsInstantToStringDoes() {
    Random random = new Random(20261206);
    for (int i = 0; i < 200_000; i++) {
      Instant instant = randomInstant(random);
      assertThat(InstantText.format(instant)).isEqualTo(instant.toString());
    }
    for (Instant edge : List.of(Instant.EPOCH, Instant.MIN, Instant.MAX, Instant.ofEpochSecond(YEAR_0 - 1),
        Instant.ofEpochSecond(YEAR_10000), Instant.ofEpochSecond(YEAR_10000 - 1, 999_999_999),
        Instant.ofEpochSecond(-1, 1), Instant.ofEpochSecond(YEAR_0, 1_000))) {
      assertThat(InstantText.format(edge)).isEqualTo(edge.toString());
    }
  }

  @Test
  void parsesWhatInstantToStringWritesToTheSameInstant() {
    Random random = new Random(61202026);
    for (int i = 0; i < 200_000; i++) {
      Instant instant = randomInstant(random);
      assertThat(InstantText.parse(instant.toString())).isEqualTo(instant);
    }
  }

  @Test
  void parsesEveryOtherTextAsInstantParseDoes() {
    List<String> texts = List.of("2026-11-30T10:15:30Z", "2026-11-30T10:15:30.1Z", "2026-11-30T10:15:30.12Z",
        "2026-11-30T10:15:30.123456789Z", "2026-11-30T10:15:30.Z", "2026-11-30T10:15:30.1234567891Z",
        "2026-02-29T10:15:30Z", "2024-02-29T10:15:30Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
        "2026-11-31T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T23:60:00Z", "2026-12-31T23:59:60Z",
        "2026-11-30t10:15:30Z", "2026-11-30T10:15:30z", "2026-11-30T10:15:30+01:00", "2026-11-30T10:15:30",
        "2026-11-30 10:15:30Z", "+2026-11-30T10:15:30Z", "-0001-11-30T10:15:30Z", "+10000-01-01T00:00:00Z",
        "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "2026-1-30T10:15:30Z", "2026-11-30T1:15:30Z",
        "2026-11-30T10:15:3aZ", "2026-11-30T10:15:30.12a4Z", "２０２６-11-30T10:15:30Z", "", "Z",
        "2026-11-30T10:15:30.123Z ", " 2026-11-30T10:15:30Z", "2026-11-30T10:15Z");
    for (String text : texts) {
      Instant expected;
      try {
        expected = Instant.parse(text);
      } catch (DateTimeParseException e) {
        assertThatThrownBy(() -> InstantText.parse(text)).as(text).isInstanceOf(DateTimeParseException.class);
        continue;
      }
      assertThat(InstantText.parse(text)).as(text).isEqualTo(expected);
    }
  }

  /** An instant in years 0 to 9999, whole seconds, milli-, micro- or nanoseconds a quarter of the time each. */
  private static Instant randomInstant(Random random) {
    return Instant.ofEpochSecond(YEAR_0 + Math.floorMod(random.nextLong(), YEAR_10000 - YEAR_0), nanos(random));
  }

  private static int nanos(Random random) {
    return switch (random.nextInt(4)) {
      case 0 -> 0;
      case 1 -> random.nextInt(1_000) * 1_000_000;
      case 2 -> random.nextInt(1_000_000) * 1_000;
      default -> random.nextInt(1_000_000_000);
    };
  }
}
