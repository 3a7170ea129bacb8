package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The shape of {@link ConsumerConfig}: each group refuses its own invalid fields, the config what relates them, a
 * stream consumer's config has no list settings, and the handlers, listener and clock are checked by {@code build()},
 * not held by the config.
 */
@HandoffTest(migrate = false)
class ConsumerConfigTest {

  private static final Duration SECOND = Duration.ofSeconds(1);

  private final TestEnvironment env;

  ConsumerConfigTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void eachGroupRefusesItsOwnFieldsByName() {
    assertThatThrownBy(() -> new ConsumerConfig.Reading(0, 100, SECOND, SECOND))
        .hasMessage("workers must be between 1 and 256, was 0");
    assertThatThrownBy(() -> new ConsumerConfig.Reading(1, 100, Duration.ofSeconds(61), SECOND))
        .hasMessage("block must be between 1 ms and 60 s, was PT1M1S");
    assertThatThrownBy(() -> new ConsumerConfig.Retries(10, Duration.ofSeconds(2), SECOND,
        FailureIsolation.OPTIMISTIC_BATCH)).hasMessage("initialBackoff must not exceed maxBackoff (PT1S), was PT2S");
    assertThatThrownBy(() -> new ConsumerConfig.Upkeep(InboxRetention.defaults(), Duration.ZERO))
        .hasMessage("retryRequestInterval must be positive, was PT0S");
    assertThatThrownBy(() -> new ConsumerConfig.StreamSettings(Duration.ofSeconds(30), Duration.ofSeconds(15),
        SECOND, StartPosition.BEGINNING, 10_000, Ordering.NONE))
        .hasMessage("leaseRenewInterval must be less than minIdle / 2 (minIdle PT30S), was PT15S");
    assertThatThrownBy(() -> new ConsumerConfig.ListSettings(Duration.ofSeconds(15), Duration.ofSeconds(5),
        Duration.ZERO)).hasMessage("reapInterval must be positive, was PT0S");
  }

  @Test
  void theConfigRefusesABackoffLongerThanItsTransportsPresumedDeadTime() {
    ConsumerConfig.Reading reading = new ConsumerConfig.Reading(1, 100, SECOND, SECOND);
    ConsumerConfig.Retries retries = new ConsumerConfig.Retries(10, SECOND, Duration.ofSeconds(20),
        FailureIsolation.OPTIMISTIC_BATCH);
    ConsumerConfig.Upkeep upkeep = new ConsumerConfig.Upkeep(InboxRetention.defaults(), Duration.ofSeconds(5));
    TopicConfig topic = TopicConfig.of("shape");
    assertThatThrownBy(() -> new ConsumerConfig("handoff", "handoff", topic, "g", "c", reading, retries, upkeep,
        new ConsumerConfig.StreamSettings(Duration.ofSeconds(10), SECOND, SECOND, StartPosition.BEGINNING, 10, Ordering.NONE)))
        .hasMessage("maxBackoff must not exceed minIdle (PT10S), was PT20S");
    assertThatThrownBy(() -> new ConsumerConfig("handoff", "handoff", topic, "g", "c", reading, retries, upkeep,
        new ConsumerConfig.ListSettings(Duration.ofSeconds(15), SECOND, SECOND)))
        .hasMessage("maxBackoff must not exceed heartbeatTtl (PT15S), was PT20S");
  }

  @Test
  void aStreamConsumersConfigHasNoListSettings() {
    ConsumerConfig config = stream().handler((tx, m) -> { }).config();
    assertThat(config.transport()).isInstanceOf(ConsumerConfig.StreamSettings.class)
        .isSameAs(config.streamSettings());
    assertThatThrownBy(config::listSettings).isInstanceOf(IllegalStateException.class)
        .hasMessage("consumer group 'g' has a stream consumer's settings, not a list's");
  }

  @Test
  void theCollaboratorsAreCheckedByBuildNotHeldByTheConfig() {
    assertThat(stream().config().group()).isEqualTo("g");
    assertThatThrownBy(() -> stream().build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("exactly one of handler and batchHandler must be set");
    assertThatThrownBy(() -> stream().handler((tx, m) -> { }).listener(null).build())
        .isInstanceOf(NullPointerException.class).hasMessage("listener");
    assertThatThrownBy(() -> stream().handler((tx, m) -> { }).clock(null).build())
        .isInstanceOf(NullPointerException.class).hasMessage("clock");
    assertThatThrownBy(() -> stream().batchHandler((tx, ms) -> { })
        .failureIsolation(FailureIsolation.SAVEPOINT_PER_MESSAGE).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a batchHandler needs failureIsolation OPTIMISTIC_BATCH, was SAVEPOINT_PER_MESSAGE");
  }

  @Test
  void aConsumerHasOneHandlerAndASecondKindIsRefusedByName() {
    assertThatThrownBy(() -> stream().handler((tx, m) -> { }).batchHandler((tx, ms) -> { }))
        .isInstanceOf(IllegalStateException.class).hasMessage("batchHandler: this consumer already has a handler; a"
            + " consumer has one handler (handler, batchHandler or jooqHandler)");
    assertThatThrownBy(() -> stream().batchHandler((tx, ms) -> { }).jooqHandler((dsl, m) -> { }))
        .isInstanceOf(IllegalStateException.class).hasMessage("jooqHandler: this consumer already has a batchHandler;"
            + " a consumer has one handler (handler, batchHandler or jooqHandler)");
    assertThatThrownBy(() -> list().jooqHandler((dsl, m) -> { }).handler((tx, m) -> { }))
        .isInstanceOf(IllegalStateException.class).hasMessage("handler: this consumer already has a jooqHandler; a"
            + " consumer has one handler (handler, batchHandler or jooqHandler)");
    // The same setter twice is an ordinary change of mind: the second replaces the first.
    assertThat(stream().handler((tx, m) -> { }).handler((tx, m) -> { }).config().group()).isEqualTo("g");
  }

  private StreamConsumerBuilder stream() {
    return StreamConsumer.builder(env.dataSource(), env.redisSpec()).topic("shape").group("g");
  }

  private ListConsumerBuilder list() {
    return ListConsumer.builder(env.dataSource(), env.redisSpec()).topic("shape").group("g");
  }
}
