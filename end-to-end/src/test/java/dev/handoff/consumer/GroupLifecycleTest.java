package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import org.junit.jupiter.api.Test;

@HandoffTest
class GroupLifecycleTest {

  private final TestEnvironment env;

  GroupLifecycleTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void newGroupStartsFromTheBeginningByDefaultSoMessagesPublishedBeforeItAreNotSkipped() {
    Fixture f = new Fixture(env, "early");
    f.publishMany(7);
    try (StreamConsumer consumer = f.consumer("late-joiner").build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(7);
    }
    assertThat(f.effectCount("late-joiner")).isEqualTo(7);
  }

  @Test
  void newEntriesOnlyIsHonouredOnlyWhenAskedFor() {
    Fixture f = new Fixture(env, "tail");
    f.publishMany(3);
    try (StreamConsumer consumer = f.consumer("tail-only").startPosition(StartPosition.NEW_ENTRIES_ONLY).build()) {
      assertThat(consumer.pollOnce().read()).isZero();
      f.publishMany(2);
      assertThat(consumer.pollOnce().handled()).isEqualTo(2);
    }
    assertThat(f.effectCount("tail-only")).isEqualTo(2);
  }

  @Test
  void anExistingGroupIsReusedAndCleanConsumersAreRemovedOnClose() {
    Fixture f = new Fixture(env, "existing");
    f.createGroupAtStart("g");
    f.publishMany(4);
    StreamConsumer consumer = f.consumer("g").consumerName("tidy").build();
    assertThat(consumer.pollOnce().handled()).isEqualTo(4); // BUSYGROUP was success
    assertThat(f.redis.xinfoConsumers2(f.streamKey(), "g")).extracting(c -> c.getName()).contains("tidy-0");
    assertThat(consumer.close(Duration.ofSeconds(5))).isTrue();
    assertThat(f.redis.xinfoConsumers2(f.streamKey(), "g")).extracting(c -> c.getName()).doesNotContain("tidy-0");
    assertThatThrownBy(consumer::pollOnce).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void everyShardOfATopicIsConsumed() {
    Fixture f = new Fixture(env, "sharded");
    for (int shard = 0; shard < 3; shard++) {
      for (int i = 0; i < 5; i++) {
        f.publish(f.message(), null, shard);
      }
    }
    try (StreamConsumer consumer = f.consumer("all").topic(TopicConfig.of("sharded").withShards(3)).batchSize(4)
        .build()) {
      PollResult total = dev.handoff.testkit.ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      assertThat(total.handled()).isEqualTo(15);
      assertThat(consumer.status().streams()).hasSize(3).allSatisfy(s -> {
        assertThat(s.backlog()).isZero();
        assertThat(s.pending().count()).isZero();
      });
    }
    assertThat(f.effectCount("all")).isEqualTo(15);
    for (int shard = 0; shard < 3; shard++) {
      assertThat(f.pendingTotal("all", shard)).isZero();
    }
  }

  @Test
  void invalidSettingsAreRefusedWithTheirName() {
    Fixture f = new Fixture(env, "config");
    assertThatThrownBy(() -> f.consumer("g").batchSize(0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("batchSize");
    assertThatThrownBy(() -> f.consumer("g").minIdle(Duration.ofSeconds(1)).leaseRenewInterval(Duration.ofMillis(600))
        .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("leaseRenewInterval");
    assertThatThrownBy(() -> f.consumer("g").backoff(Duration.ofSeconds(1), Duration.ofSeconds(60)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBackoff");
    assertThatThrownBy(() -> f.consumer("bad name").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("group");
    assertThatThrownBy(() -> f.consumerWithoutHandler("g").batchHandler((tx, b) -> { })
        .failureIsolation(FailureIsolation.SAVEPOINT_PER_MESSAGE).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("batchHandler");
  }
}
