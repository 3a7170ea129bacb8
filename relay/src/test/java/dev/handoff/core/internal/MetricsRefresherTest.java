package dev.handoff.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.testing.LogCapture;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The refresher's schedule survives whatever one refresh throws, an {@link Error} included. */
class MetricsRefresherTest {

  @Test
  void anErrorInOneRefreshLeavesTheLaterRefreshesScheduled() {
    AtomicInteger runs = new AtomicInteger();
    try (LogCapture logs = LogCapture.start();
        MetricsRefresher refresher = new MetricsRefresher("erroring", Duration.ofMillis(10), () -> {
          if (runs.incrementAndGet() == 1) {
            throw new StackOverflowError("simulated deep recursion");
          }
        })) {
      await().atMost(Duration.ofSeconds(30)).until(() -> runs.get() >= 3);

      assertThat(logs.warnings()).anyMatch(l -> l.startsWith("ERROR ") && l.contains("metrics of erroring")
          && l.contains("simulated deep recursion"));
    }
  }
}
