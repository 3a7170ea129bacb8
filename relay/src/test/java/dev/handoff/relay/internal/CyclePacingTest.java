package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The relay loop's waits between cycles, as numbers: no clock and no thread involved. */
class CyclePacingTest {

  @Test
  void quietWaitsDoubleFromTwoMillisecondsUpToTheIdlePollInterval() {
    CyclePacing pacing = new CyclePacing(Duration.ofMillis(100));
    assertThat(waits(pacing, 7, false)).containsExactly(2L, 4L, 8L, 16L, 32L, 64L, 100L);
    pacing.busy();
    assertThat(waits(pacing, 2, false)).as("a busy cycle starts the doubling over").containsExactly(2L, 4L);
  }

  @Test
  void whileNotificationsArriveTheIdleWaitStretchesToTenIntervalsAndShrinksBackWhenTheyStop() {
    CyclePacing pacing = new CyclePacing(Duration.ofMillis(100));
    assertThat(waits(pacing, 10, true)).containsExactly(2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L, 512L, 1000L);
    assertThat(waits(pacing, 1, false)).as("LISTEN lost, or a full list holds rows back: the plain interval")
        .containsExactly(100L);
  }

  @Test
  void heldMarksBringTheNextCycleOnAfterTheFirstWaitAndThenTheDoublingStartsOver() {
    CyclePacing pacing = new CyclePacing(Duration.ofSeconds(1));
    waits(pacing, 10, true);
    assertThat(pacing.nextWaitMillis(true, true)).isEqualTo(CyclePacing.FIRST_WAIT_MILLIS);
    assertThat(pacing.nextWaitMillis(false, true)).isEqualTo(2L);
    assertThat(pacing.nextWaitMillis(false, true)).isEqualTo(4L);
    assertThat(new CyclePacing(Duration.ofMillis(1)).nextWaitMillis(true, false))
        .as("never longer than the idle poll interval").isEqualTo(1L);
  }

  private static List<Long> waits(CyclePacing pacing, int n, boolean notified) {
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(pacing.nextWaitMillis(false, notified));
    }
    return out;
  }
}
