package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@HandoffTest
class CompetingConsumersTest {

  private final TestEnvironment env;

  CompetingConsumersTest(TestEnvironment env) {
    this.env = env;
  }

  /**
   * Two consumers with two workers each, duplicated publishes, transient handler failures, a short minIdle (so
   * reclaims and backoffs interleave with normal reads): every message has exactly one effect in the end.
   */
  @Test
  void competingConsumersWithDuplicatesAndTransientFailuresGiveExactlyOneEffectPerMessage() {
    Fixture f = new Fixture(env, "compete");
    f.createGroupAtStart("c");
    AtomicInteger failures = new AtomicInteger();
    MessageHandler effect = f.effect("c", null);
    MessageHandler flaky = (tx, m) -> {
      effect.handle(tx, m);
      if (ThreadLocalRandom.current().nextInt(20) == 0) {
        failures.incrementAndGet();
        throw new IllegalStateException("transient");
      }
    };
    try (StreamConsumer a = f.consumer("c").consumerName("a").workers(2).batchSize(25).handler(flaky)
            .minIdle(Duration.ofMillis(400)).backoff(Duration.ofMillis(20), Duration.ofMillis(100)).build();
        StreamConsumer b = f.consumer("c").consumerName("b").workers(2).batchSize(25).handler(flaky)
            .minIdle(Duration.ofMillis(400)).backoff(Duration.ofMillis(20), Duration.ofMillis(100)).build()) {
      a.start();
      b.start();
      List<StreamMessage> messages = f.publishMany(800);
      for (int i = 0; i < 800; i += 8) {
        f.publish(messages.get(i)); // the relay re-published every eighth message
      }
      ConsumerTestKit.awaitDrained(a, Duration.ofSeconds(60));
      assertThat(a.status().duplicatesSkipped() + b.status().duplicatesSkipped()).isGreaterThanOrEqualTo(100);
    }
    assertThat(failures.get()).isPositive();
    assertThat(f.effectCount("c")).isEqualTo(800);
    assertThat(f.doubleEffects("c")).isZero();
    assertThat(f.inboxCount("c", "processed")).isEqualTo(800);
    assertThat(f.pendingTotal("c")).isZero();
  }
}
