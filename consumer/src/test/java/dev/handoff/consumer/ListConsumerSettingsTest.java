package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The list builder reports an invalid setting by its own name (heartbeatTtl, heartbeatInterval, reapInterval), never
 * by a stream setting's (minIdle, leaseRenewInterval, reclaimInterval), and its config holds them as
 * {@link ConsumerConfig.ListSettings}, with no stream settings.
 */
@HandoffTest(migrate = false)
class ListConsumerSettingsTest {

  private final TestEnvironment env;

  ListConsumerSettingsTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aHeartbeatIntervalOfHalfTheTtlOrMoreIsReportedByTheListNames() {
    assertInvalid(b -> b.heartbeatTtl(Duration.ofMillis(600)).heartbeatInterval(Duration.ofMillis(300)),
        "heartbeatInterval must be less than heartbeatTtl / 2 (heartbeatTtl PT0.6S), was PT0.3S");
    assertInvalid(b -> b.heartbeatTtl(Duration.ofSeconds(1)).heartbeatInterval(Duration.ofSeconds(2)),
        "heartbeatInterval must be less than heartbeatTtl / 2 (heartbeatTtl PT1S), was PT2S");
    assertInvalid(b -> b.heartbeatInterval(Duration.ZERO), "heartbeatInterval must be positive, was PT0S");
  }

  @Test
  void aZeroOrNegativeHeartbeatTtlIsReportedAsHeartbeatTtl() {
    assertInvalid(b -> b.heartbeatTtl(Duration.ZERO), "heartbeatTtl must be positive, was PT0S");
    assertInvalid(b -> b.heartbeatTtl(Duration.ofSeconds(-1)), "heartbeatTtl must be positive, was PT-1S");
    assertThatThrownBy(() -> valid().heartbeatTtl(null).build()).isInstanceOf(NullPointerException.class)
        .hasMessage("heartbeatTtl");
  }

  @Test
  void aZeroReapIntervalIsReportedAsReapInterval() {
    assertInvalid(b -> b.reapInterval(Duration.ZERO), "reapInterval must be positive, was PT0S");
    assertThatThrownBy(() -> valid().reapInterval(null).build()).isInstanceOf(NullPointerException.class)
        .hasMessage("reapInterval");
  }

  @Test
  void aMaxBackoffAboveTheTtlIsReportedAgainstHeartbeatTtl() {
    assertInvalid(b -> b.heartbeatTtl(Duration.ofSeconds(2)).backoff(Duration.ofMillis(100), Duration.ofSeconds(3)),
        "maxBackoff must not exceed heartbeatTtl (PT2S), was PT3S");
  }

  @Test
  void settingsNamedAlikeInBothBuildersKeepTheirMessages() {
    assertInvalid(b -> b.batchSize(0), "batchSize must be between 1 and 10000, was 0");
    assertInvalid(b -> b.workers(0), "workers must be between 1 and 256, was 0");
    assertInvalid(b -> b.maxDeliveries(0), "maxDeliveries must be between 1 and 1000000, was 0");
    assertInvalid(b -> b.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)),
        "initialBackoff must not exceed maxBackoff (PT1S), was PT2S");
  }

  @Test
  void theDefaultsAreValid() {
    ConsumerConfig config = valid().config();
    assertThat(config.transport()).isEqualTo(new ConsumerConfig.ListSettings(ListConsumerBuilder.DEFAULT_HEARTBEAT_TTL,
        Duration.ofSeconds(5), ListConsumerBuilder.DEFAULT_REAP_INTERVAL));
    assertThat(config.listSettings()).isSameAs(config.transport());
    assertThat(config.retries().maxBackoff()).isEqualTo(ListConsumerBuilder.DEFAULT_HEARTBEAT_TTL);
  }

  @Test
  void aListConsumersConfigHasNoStreamSettings() {
    ConsumerConfig config = valid().config();
    assertThatThrownBy(config::streamSettings).isInstanceOf(IllegalStateException.class)
        .hasMessage("consumer group 'g' has a list consumer's settings, not a stream's");
  }

  private void assertInvalid(UnaryOperator<ListConsumerBuilder> settings, String message) {
    assertThatThrownBy(() -> settings.apply(valid()).build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessage(message)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("minIdle", "leaseRenewInterval", "reclaimInterval")
            .doesNotContain("\n"));
  }

  private ListConsumerBuilder valid() {
    return ListConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("settings")).group("g").handler((tx, m) -> { });
  }
}
