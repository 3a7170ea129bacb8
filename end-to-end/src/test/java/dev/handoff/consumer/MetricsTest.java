package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Micrometer binding end to end on a known scenario: 20 messages appended on 2 shards, relayed, consumed by a
 * group whose handler refuses one poison message (dead-lettered after 3 deliveries), then replayed (20
 * duplicates), and a list consumer paused by its environment. Every figure is exact; the gauges are refreshed
 * explicitly, never waited for.
 */
@HandoffTest
class MetricsTest {

  private static final int N = 20;

  private final TestEnvironment env;

  MetricsTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void outboxRelayAndConsumerMetricsGiveExactFiguresForAKnownScenario() throws Exception {
    MeterRegistry registry = new SimpleMeterRegistry();
    String topic = "metered";
    TopicConfig config = TopicConfig.of(topic).withShards(2);
    Fixture f = new Fixture(env, topic);

    Outbox outbox = Outbox.builder().schema(env.schema()).topic(config).meterRegistry(registry).build();
    String poisonKey = "k7";
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < N; i++) {
        outbox.append(tx, Message.builder(topic, "test.event").key("k" + i).payload("{}").build());
      }
      tx.commit();
    }
    assertThat(counter(registry, "handoff.outbox.appended", Tags.of("topic", topic))).isEqualTo(N);
    long onShard0 = env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND shard = 0", topic);
    long onShard1 = N - onShard0;
    assertThat(onShard0).isBetween(1L, N - 1L); // both shards hold rows, so both shards' tags are exercised

    Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(config).meterRegistry(registry).metricsRefreshInterval(Duration.ofHours(1)).build();
    try (relay) {
      relay.maintainOnce();
      assertThat(gauge(registry, "handoff.outbox.depth", shard(topic, 0))).isEqualTo(onShard0);
      assertThat(gauge(registry, "handoff.outbox.depth", shard(topic, 1))).isEqualTo(onShard1);
      assertThat(registry.get("handoff.outbox.oldest.age").tags(shard(topic, 0)).timeGauge()
          .value(TimeUnit.MILLISECONDS)).isPositive();
      assertThat(gauge(registry, "handoff.stream.length", shard(topic, 0))).isZero();

      assertThat(relay.relayOnce().published()).isEqualTo(N);
      relay.maintainOnce();
      for (int s = 0; s < 2; s++) {
        long rows = s == 0 ? onShard0 : onShard1;
        assertThat(counter(registry, "handoff.relay.published", shard(topic, s))).isEqualTo(rows);
        assertThat(registry.get("handoff.relay.latency").tags(shard(topic, s)).timer().count()).isEqualTo(1);
        assertThat(gauge(registry, "handoff.outbox.depth", shard(topic, s))).isZero();
        assertThat(registry.get("handoff.outbox.oldest.age").tags(shard(topic, s)).timeGauge()
            .value(TimeUnit.MILLISECONDS)).isZero();
        assertThat(gauge(registry, "handoff.stream.length", shard(topic, s))).isEqualTo(rows);
      }
      assertThat(gauge(registry, "handoff.relay.leases.owned", Tags.empty())).isEqualTo(2);
      assertThat(registry.find("handoff.relay.lease.losses").counters()).allMatch(c -> c.count() == 0);
    }

    AtomicInteger handlerCalls = new AtomicInteger();
    OutcomeCounts outcomes = new OutcomeCounts();
    MessageHandler effect = f.effect("ledger", null);
    StreamConsumer consumer = f.consumer("ledger")
        .topic(config)
        .maxDeliveries(3)
        .listener(outcomes)
        .meterRegistry(registry)
        .metricsRefreshInterval(Duration.ofHours(1))
        .handler((tx, m) -> {
          handlerCalls.incrementAndGet();
          if (m.key().equals(poisonKey)) {
            throw new IllegalArgumentException("poison " + m.key());
          }
          effect.handle(tx, m);
        })
        .build();
    Tags group = Tags.of("topic", topic, "group", "ledger");
    try (consumer) {
      consumer.maintainOnce();
      assertThat(gauge(registry, "handoff.consumer.backlog", group.and("shard", "0"))).isEqualTo(onShard0);
      assertThat(gauge(registry, "handoff.consumer.backlog", group.and("shard", "1"))).isEqualTo(onShard1);

      ConsumerTestKit.drain(consumer, Duration.ofSeconds(20));
      consumer.maintainOnce();
      assertThat(f.effectCount("ledger")).isEqualTo(N - 1);
      assertThat(counter(registry, "handoff.consumer.handled", group)).isEqualTo(N - 1);
      assertThat(counter(registry, "handoff.consumer.dead.lettered", group)).isEqualTo(1);
      assertThat(counter(registry, "handoff.consumer.failed", group)).isEqualTo(outcomes.failed.get());
      assertThat(outcomes.failed.get()).isEqualTo(2); // the 3rd failed delivery dead-letters instead
      assertThat(counter(registry, "handoff.consumer.duplicates", group)).isZero();
      assertThat(counter(registry, "handoff.consumer.pauses", group)).isZero();
      assertThat(registry.get("handoff.consumer.handler").tags(group).timer().count()).isEqualTo(handlerCalls.get());
      assertThat(gauge(registry, "handoff.consumer.dead.letters", group)).isEqualTo(1);
      assertThat(gauge(registry, "handoff.consumer.paused", group)).isZero();
      for (int s = 0; s < 2; s++) {
        Tags t = group.and("shard", Integer.toString(s));
        assertThat(gauge(registry, "handoff.consumer.backlog", t)).isZero();
        assertThat(gauge(registry, "handoff.consumer.pending", t)).isZero();
        assertThat(registry.get("handoff.consumer.oldest.pending.age").tags(t).timeGauge()
            .value(TimeUnit.MILLISECONDS)).isZero();
      }

      PollResult replay = consumer.replayRetained();
      assertThat(counter(registry, "handoff.consumer.duplicates", group)).isEqualTo(replay.duplicates());
      assertThat(replay.duplicates()).isEqualTo(N);
      assertThat(counter(registry, "handoff.consumer.handled", group)).isEqualTo(N - 1);
    }
  }

  @Test
  void onListsAnInfrastructurePauseShowsInThePausedGaugeAndThePausesCounterAndNothingIsCountedAsFailed()
      throws Exception {
    MeterRegistry registry = new SimpleMeterRegistry();
    String topic = "metered-list";
    Fixture f = new Fixture(env, topic);
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        outbox.append(tx, Message.builder(topic, "test.event").key("k" + i).payload("{}").build());
      }
      tx.commit();
    }
    Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(topic).listTransport(100).meterRegistry(registry).metricsRefreshInterval(Duration.ofHours(1)).build();
    try (relay) {
      assertThat(relay.relayOnce().published()).isEqualTo(5);
      relay.maintainOnce();
      assertThat(gauge(registry, "handoff.list.length", shard(topic, 0))).isEqualTo(5);
      assertThat(registry.find("handoff.stream.length").gauges()).isEmpty();
    }

    AtomicBoolean down = new AtomicBoolean(true);
    MessageHandler effect = f.effect("g", null);
    ListConsumer consumer = ListConsumer.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(topic).group("g")
        .block(Duration.ofMillis(100))
        .meterRegistry(registry)
        .metricsRefreshInterval(Duration.ofHours(1))
        .handler((tx, m) -> {
          if (down.get()) {
            throw new RetryLaterException("the card network is down");
          }
          effect.handle(tx, m);
        })
        .build();
    Tags group = Tags.of("topic", topic, "group", "g");
    try (consumer) {
      consumer.maintainOnce();
      assertThat(gauge(registry, "handoff.consumer.backlog", group.and("shard", "0"))).isEqualTo(5);
      consumer.start();
      // The worker shows in status() a moment before its listener hears of the pause: wait for both.
      ConsumerTestKit.await("the worker pauses", Duration.ofSeconds(20), () -> !consumer.status().paused().isEmpty()
          && counter(registry, "handoff.consumer.pauses", group) == 1);
      consumer.maintainOnce();
      assertThat(gauge(registry, "handoff.consumer.paused", group)).isEqualTo(1);
      assertThat(counter(registry, "handoff.consumer.pauses", group)).isEqualTo(1);
      double held = gauge(registry, "handoff.consumer.pending", group.and("shard", "0"));
      assertThat(held).isPositive(); // the paused worker holds what it took; the rest waits in the list
      assertThat(held + gauge(registry, "handoff.consumer.backlog", group.and("shard", "0"))).isEqualTo(5);

      down.set(false);
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));
      consumer.maintainOnce();
      assertThat(f.effectCount("g")).isEqualTo(5);
      assertThat(counter(registry, "handoff.consumer.handled", group)).isEqualTo(5);
      assertThat(counter(registry, "handoff.consumer.pauses", group)).isEqualTo(1);
      assertThat(counter(registry, "handoff.consumer.failed", group)).isZero();
      assertThat(counter(registry, "handoff.consumer.dead.lettered", group)).isZero();
      assertThat(gauge(registry, "handoff.consumer.paused", group)).isZero();
      assertThat(gauge(registry, "handoff.consumer.dead.letters", group)).isZero();
      assertThat(gauge(registry, "handoff.consumer.backlog", group.and("shard", "0"))).isZero();
      assertThat(gauge(registry, "handoff.consumer.pending", group.and("shard", "0"))).isZero();
    }
  }

  @Test
  void aMetricsRefreshIntervalThatIsNotPositiveIsRefusedWithItsName() {
    Fixture f = new Fixture(env, "refused");
    assertThatThrownBy(() -> f.consumer("g").meterRegistry(new SimpleMeterRegistry())
        .metricsRefreshInterval(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("metricsRefreshInterval");
    assertThat(ConsumerBuilder.DEFAULT_METRICS_REFRESH_INTERVAL).isEqualTo(Duration.ofSeconds(10));
  }

  private static Tags shard(String topic, int shard) {
    return Tags.of("topic", topic, "shard", Integer.toString(shard));
  }

  private static double counter(MeterRegistry registry, String name, Tags tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  private static double gauge(MeterRegistry registry, String name, Tags tags) {
    return registry.get(name).tags(tags).gauge().value();
  }
}
