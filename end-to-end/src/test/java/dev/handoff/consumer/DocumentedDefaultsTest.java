package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The defaults docs/guarantees.md cites, read back from the configs the builders build with. */
@HandoffTest(migrate = false)
class DocumentedDefaultsTest {

  private static final Pattern WORKER_NAME = Pattern.compile("(.+)-(\\d+)-([0-9a-f]{6})-(\\d+)");

  private final TestEnvironment env;

  DocumentedDefaultsTest(TestEnvironment env) {
    this.env = env;
  }

  private StreamConsumerBuilder stream() {
    return StreamConsumer.builder(env.dataSource(), env.redisSpec()).topic(TopicConfig.of("defaults")).group("g")
        .handler((tx, m) -> {});
  }

  private ListConsumerBuilder list() {
    return ListConsumer.builder(env.dataSource(), env.redisSpec()).topic(TopicConfig.of("defaults")).group("g")
        .handler((tx, m) -> {});
  }

  @Test
  void maxDeliveriesDefaultsToTen() {
    assertThat(stream().config().retries().maxDeliveries()).isEqualTo(10);
    assertThat(list().config().retries().maxDeliveries()).isEqualTo(10);
  }

  @Test
  void statusScanLimitDefaultsToTenThousand() {
    assertThat(stream().config().streamSettings().statusScanLimit()).isEqualTo(10_000);
    assertThat(StreamConsumerBuilder.DEFAULT_STATUS_SCAN_LIMIT).isEqualTo(10_000);
  }

  @Test
  void minIdleDefaultsToThirtySeconds() {
    assertThat(stream().config().streamSettings().minIdle()).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void reclaimIntervalDefaultsToOneSecond() {
    assertThat(stream().config().streamSettings().reclaimInterval()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void leaseRenewIntervalDefaultsToAThirdOfMinIdle() {
    assertThat(stream().config().streamSettings().leaseRenewInterval()).isEqualTo(Duration.ofSeconds(10));
    assertThat(stream().minIdle(Duration.ofSeconds(9)).config().streamSettings().leaseRenewInterval())
        .isEqualTo(Duration.ofSeconds(3));
    assertThat(stream().minIdle(Duration.ofMillis(600)).config().streamSettings().leaseRenewInterval())
        .isEqualTo(Duration.ofMillis(200));
  }

  @Test
  void backoffDefaultsToOneSecondDoublingUpToMinIdle() {
    ConsumerConfig.Retries defaults = stream().config().retries();
    assertThat(defaults.initialBackoff()).isEqualTo(Duration.ofSeconds(1));
    assertThat(defaults.maxBackoff()).isEqualTo(Duration.ofSeconds(30));
    assertThat(stream().minIdle(Duration.ofSeconds(12)).config().retries().maxBackoff())
        .isEqualTo(Duration.ofSeconds(12));
  }

  @Test
  void newGroupsStartFromTheBeginningByDefault() {
    assertThat(stream().config().streamSettings().startPosition()).isEqualTo(StartPosition.BEGINNING);
  }

  @Test
  void defaultWorkerNamesAreHostPidRandomAndWorkerIndex() {
    ConsumerConfig config = stream().workers(3).config();
    for (int worker = 0; worker < 3; worker++) {
      assertWorkerName(config.workerName(worker), worker);
    }
    ConsumerConfig listConfig = list().workers(2).config();
    assertWorkerName(listConfig.workerName(1), 1);
  }

  @Test
  void twoBuildersInOneProcessGetDifferentDefaultNames() {
    String first = stream().config().workerName(0);
    String second = stream().config().workerName(0);
    assertThat(first).isNotEqualTo(second);
    assertThat(list().config().workerName(0)).isNotEqualTo(list().config().workerName(0));
  }

  @Test
  void inboxRetentionDefaultsToAnAutomaticPurgeEveryTenMinutes() {
    InboxRetention defaults = InboxRetention.defaults();
    assertThat(defaults.automatic()).isTrue();
    assertThat(defaults.purgeInterval()).isEqualTo(Duration.ofMinutes(10));
    assertThat(stream().config().upkeep().inboxRetention()).isEqualTo(defaults);
    assertThat(list().config().upkeep().inboxRetention()).isEqualTo(defaults);
  }

  @Test
  void requestedDeadLetterRetriesArePickedUpEveryFiveSeconds() {
    assertThat(ConsumerBuilder.DEFAULT_RETRY_REQUEST_INTERVAL).isEqualTo(Duration.ofSeconds(5));
    assertThat(stream().config().upkeep().retryRequestInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(list().config().upkeep().retryRequestInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThatThrownBy(() -> stream().retryRequestInterval(Duration.ZERO).config())
        .isInstanceOf(IllegalArgumentException.class).hasMessage("retryRequestInterval must be positive, was PT0S");
  }

  @Test
  void dedupWindowDefaultsToTheRelaysOutboxRetentionPlusOneDay() {
    InboxRetention defaults = InboxRetention.defaults();
    assertThat(defaults.outboxRetention()).isEqualTo(Duration.ofDays(7))
        .isEqualTo(RelayBuilder.DEFAULT_OUTBOX_RETENTION);
    assertThat(defaults.dedupWindow()).isEqualTo(Duration.ofDays(8));
    assertThat(InboxRetention.forOutboxRetention(Duration.ofDays(3)).dedupWindow()).isEqualTo(Duration.ofDays(4));
  }

  private static void assertWorkerName(String name, int worker) {
    assertThat(name).matches(ConsumerConfig.NAME_PATTERN);
    Matcher parts = WORKER_NAME.matcher(name);
    assertThat(parts.matches()).as("%s has the shape <host>-<pid>-<random>-<worker>", name).isTrue();
    assertThat(parts.group(1)).isNotEmpty();
    assertThat(Long.parseLong(parts.group(2))).isEqualTo(ProcessHandle.current().pid());
    assertThat(Integer.parseInt(parts.group(4))).isEqualTo(worker);
  }
}
