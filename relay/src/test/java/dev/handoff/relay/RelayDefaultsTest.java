package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The relay and topic defaults docs/guarantees.md cites, read back from the built configs. */
@HandoffTest(migrate = false)
class RelayDefaultsTest {

  private final TestEnvironment env;

  RelayDefaultsTest(TestEnvironment env) {
    this.env = env;
  }

  private RelayConfig relayDefaults() {
    return Relay.builder(env.dataSource(), env.redisSpec()).topic("defaults").build().config();
  }

  @Test
  void outboxRetentionDefaultsToSevenDays() {
    assertThat(relayDefaults().retention().outboxRetention()).isEqualTo(Duration.ofDays(7));
  }

  @Test
  void leaseTtlDefaultsToTenSeconds() {
    assertThat(relayDefaults().leases().ttl()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void maintenanceIntervalDefaultsToThirtySeconds() {
    assertThat(relayDefaults().retention().maintenanceInterval()).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void streamsAreTrimmedAgainAfterOneThousandEntriesByDefault() {
    RelayConfig config = relayDefaults();
    assertThat(config.trimming().enabled()).isTrue();
    assertThat(config.trimming().slack()).isEqualTo(1_000);
  }

  @Test
  void trimLimitDefaultsToTenThousandEntriesPerCall() {
    assertThat(relayDefaults().trimming().limit()).isEqualTo(10_000);
  }

  @Test
  void topicCapacityDefaultsToAOneSecondWaitPastAMillionUnpublishedRows() {
    CapacityPolicy standard = CapacityPolicy.waitUpTo(1_000_000, java.time.Duration.ofSeconds(1));
    assertThat(CapacityPolicy.standard()).isEqualTo(standard);
    assertThat(TopicConfig.of("defaults").capacity()).isEqualTo(standard);
    assertThat(relayDefaults().topics()).singleElement()
        .satisfies(topic -> assertThat(topic.capacity()).isEqualTo(standard));
    TopicConfig unconfigured = Outbox.builder().build().config().topic("unconfigured");
    assertThat(unconfigured.shards()).isEqualTo(1);
    assertThat(unconfigured.capacity()).isEqualTo(standard);
  }
}
