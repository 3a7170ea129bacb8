package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxFullException;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * The relay's and the outbox's meters on scenarios with known outcomes: repairs (a re-sent batch, a lost stream), a
 * refusal, the schedule, a failed refresh.
 */
@HandoffTest
class RelayMetricsTest {

  private final TestEnvironment env;

  RelayMetricsTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aBatchSentAgainAfterACrashCountsAsRepairedAlreadyPresentAndEveryRowAsPublishedOnce() throws Exception {
    String topic = "repaired";
    RelayTestSupport.appendKeyed(env, topic, 30);
    MeterRegistry registry = new SimpleMeterRegistry();
    AtomicBoolean crash = new AtomicBoolean(true);
    Relay relay = RelayTestSupport.relay(env, topic).meterRegistry(registry).faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        if (crash.getAndSet(false)) {
          throw new SimulatedCrash("after the XADD, before the mark");
        }
      }
    }).build();
    try (relay) {
      assertThatThrownBy(relay::relayOnce).isInstanceOf(SimulatedCrash.class);
      long written = env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0));
      assertThat(written).isPositive();
      Tags shard = Tags.of("topic", topic, "shard", "0");
      assertThat(registry.get("handoff.relay.published").tags(shard).counter().count()).isZero();

      long published = relay.relayOnce().published();
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND published_at IS NULL", topic))
          .isZero();
      assertThat(registry.get("handoff.relay.repairs").tags(shard).tag("kind", "already_present").counter()
          .count()).isEqualTo(written);
      assertThat(registry.get("handoff.relay.repairs").tags(shard).tag("kind", "anomaly").counter().count())
          .isZero();
      assertThat(registry.get("handoff.relay.published").tags(shard).counter().count()).isEqualTo(published);
      assertThat(published).isEqualTo(30);
      assertThat(env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0))).isEqualTo(30);
    }
  }

  @Test
  void theOutboxCountsAppendsAndRefusalsPerTopic() throws Exception {
    String topic = "bounded";
    MeterRegistry registry = new SimpleMeterRegistry();
    Outbox outbox = Outbox.builder().schema(env.schema())
        .topic(TopicConfig.of(topic).withCapacity(CapacityPolicy.reject(2)))
        .depthRefreshInterval(Duration.ZERO.plusNanos(1)).meterRegistry(registry).build();
    for (int i = 0; i < 3; i++) {
      try (Connection tx = env.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        Message m = Message.builder(topic, "entry").payload("p" + i).build();
        if (i < 2) {
          outbox.append(tx, m);
        } else {
          assertThatThrownBy(() -> outbox.append(tx, m)).isInstanceOf(OutboxFullException.class);
        }
        tx.commit();
      }
    }
    Tags tags = Tags.of("topic", topic);
    assertThat(registry.get("handoff.outbox.appended").tags(tags).counter().count()).isEqualTo(2);
    assertThat(registry.get("handoff.outbox.refused").tags(tags).counter().count()).isEqualTo(1);
  }

  @Test
  void theGaugesRefreshOnTheirOwnScheduleAndTheRefresherStopsWithTheRelay() throws Exception {
    String topic = "scheduled";
    RelayTestSupport.append(env, topic, 5);
    MeterRegistry registry = new SimpleMeterRegistry();
    Relay relay = RelayTestSupport.relay(env, topic).meterRegistry(registry)
        .metricsRefreshInterval(Duration.ofMillis(50)).build();
    String thread = "handoff-metrics-relay-" + relay.config().owner();
    Tags shard = Tags.of("topic", topic, "shard", "0");
    try (relay) {
      await().atMost(Duration.ofSeconds(10))
          .until(() -> registry.get("handoff.outbox.depth").tags(shard).gauge().value() == 5);
      relay.relayOnce();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> registry.get("handoff.stream.length").tags(shard).gauge().value() == 5
              && registry.get("handoff.outbox.depth").tags(shard).gauge().value() == 0);
      assertThat(threadAlive(thread)).isTrue();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> !threadAlive(thread));
  }

  @Test
  void aMetricsRefreshIntervalThatIsNotPositiveIsRefusedWithItsName() {
    for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofSeconds(-1), null}) {
      assertThatThrownBy(() -> RelayTestSupport.relay(env, "refused").meterRegistry(new SimpleMeterRegistry())
          .metricsRefreshInterval(bad).build())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("metricsRefreshInterval");
    }
    assertThat(RelayBuilder.DEFAULT_METRICS_REFRESH_INTERVAL).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void aStreamLostFromRedisCountsItsRepublishedRowsAsRepairs() throws Exception {
    String topic = "lost";
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    MeterRegistry registry = new SimpleMeterRegistry();
    AtomicLong heard = new AtomicLong();
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = Relay.builder(env.dataSource(), env.specOf(redis)).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(topic).meterRegistry(registry).listener(new RelayListener() {
          @Override
          public void streamLost(ShardId shard, long republished) {
            heard.addAndGet(republished);
          }
        }).build()) {
      RelayTestSupport.append(env, topic, 50);
      relay.relayOnce();
      redis.del(key);
      RelayTestSupport.append(env, topic, 5);
      relay.relayOnce();
      relay.relayOnce();

      assertThat(redis.xlen(key)).isEqualTo(55);
      assertThat(heard.get()).isEqualTo(50); // the user's listener is still called, with the same figure
      Tags shard = Tags.of("topic", topic, "shard", "0");
      assertThat(registry.get("handoff.relay.repairs").tags(shard).tag("kind", "stream_lost").counter().count())
          .isEqualTo(50);
    }
  }

  @Test
  void aFailedRefreshKeepsTheLastValuesAndLogsAWarning() throws Exception {
    String topic = "unreachable";
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    MeterRegistry registry = new SimpleMeterRegistry();
    Tags shard = Tags.of("topic", topic, "shard", "0");
    try (LogCapture logs = LogCapture.start();
        Relay relay = Relay.builder(env.dataSource(), env.specOf(redis)).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic(topic).meterRegistry(registry).metricsRefreshInterval(Duration.ofMillis(50)).build()) {
      RelayTestSupport.append(env, topic, 3);
      relay.relayOnce();
      relay.maintainOnce();
      assertThat(registry.get("handoff.stream.length").tags(shard).gauge().value()).isEqualTo(3);

      server.stop();
      assertThatThrownBy(() -> relay.maintainOnce()).isInstanceOf(RuntimeException.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> logs.warnings().stream()
          .anyMatch(l -> l.contains("refresh failed, the gauges keep their last values")));
      assertThat(registry.get("handoff.stream.length").tags(shard).gauge().value()).isEqualTo(3);
      server.startAgain();
    }
  }

  private static boolean threadAlive(String name) {
    return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals(name) && t.isAlive());
  }
}
