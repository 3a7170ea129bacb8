package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Health;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.RedisClient;

/**
 * {@link HandoffConsumer#health()} for each of its reasons, with real faults: a worker thread killed by an
 * {@link Error}, Redis stopped, a table the handler writes dropped, a handler's {@link RetryLaterException}; and
 * DOWN before start and after close.
 */
@HandoffTest
class ConsumerHealthTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);

  private final TestEnvironment env;

  ConsumerHealthTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aWorkerThreadKilledByAnErrorShowsAsDegradedIsReplacedAndEveryMessageIsHandledOnce(Transport transport)
      throws Exception {
    String group = "health-kill-" + transport.name().toLowerCase();
    Fixture f = new Fixture(env, group);
    AtomicReference<Thread> killed = new AtomicReference<>();
    CountDownLatch replacementInBatch = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // The first batch that commits kills its worker's thread before the acknowledgement, as a crash would; the
    // thread that takes over that worker (same name, a new thread) is held in its first batch until released.
    ConsumerFaults faults = point -> {
      Thread me = Thread.currentThread();
      if (point == ConsumerFaults.Point.AFTER_COMMIT && killed.compareAndSet(null, me)) {
        throw new StackOverflowError("a thread killed by an Error, after its commit");
      }
      Thread k = killed.get();
      if (k != null && me != k && me.getName().equals(k.getName()) && point == ConsumerFaults.Point.BEFORE_COMMIT) {
        replacementInBatch.countDown();
        try {
          release.await(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    };
    HandoffConsumer consumer;
    try (LogCapture logs = LogCapture.start();
        Relay relay = TransportSide.relay(env, f.topic, transport).build();
        HandoffConsumer c = consumer(transport, f, group, faults)) {
      consumer = c;
      assertThat(consumer.health().status()).isEqualTo(Health.Status.DOWN);
      assertThat(consumer.health().reasons()).extracting(Health.Reason::code).containsExactly("not-started");
      List<UUID> ids = ids(TransportSide.append(env, f.topic, 20, i -> "{\"n\":" + i + "}"));
      TransportSide.publishAll(env, relay);
      consumer.start();

      assertThat(replacementInBatch.await(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
      Health replaced = consumer.health();
      assertThat(replaced.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(replaced.reasons()).extracting(Health.Reason::code).containsExactly("worker-replaced");
      assertThat(replaced.reasons().get(0).message()).contains(killed.get().getName());

      release.countDown();
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      ConsumerTestKit.awaitProcessed(consumer, ids, DEADLINE);
      if (consumer instanceof StreamConsumer stream) {
        ConsumerTestKit.awaitDrained(stream, DEADLINE);
      } else {
        ConsumerTestKit.awaitDrained((ListConsumer) consumer, DEADLINE);
      }
      assertThat(f.effectCount(group)).isEqualTo(20);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group, "processed")).isEqualTo(20);
      assertThat(consumer.status().deadLetters()).isZero();
      assertThat(consumer.health()).isEqualTo(Health.UP);
      assertThat(logs.warnings()).filteredOn(l -> l.startsWith("ERROR") && l.contains("died; starting a new thread"))
          .hasSize(1);
    }
    Health closed = consumer.health();
    assertThat(closed.status()).isEqualTo(Health.Status.DOWN);
    assertThat(closed.reasons()).extracting(Health.Reason::code).containsExactly("closed");
  }

  @Test
  void everyWorkerDeadIsDownAndOnceTheCrashesStopEveryMessageIsHandledOnce() throws Exception {
    Fixture f = new Fixture(env, "health-all-dead");
    AtomicBoolean crashing = new AtomicBoolean(true);
    // Every batch kills its thread before it commits, the replacements' too: the one worker is dead most of the time.
    ConsumerFaults faults = point -> {
      if (crashing.get() && point == ConsumerFaults.Point.BEFORE_COMMIT) {
        throw new StackOverflowError("a thread killed by an Error, before its commit");
      }
    };
    try (LogCapture logs = LogCapture.start();
        Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer("g").workers(1).minIdle(Duration.ofSeconds(60))
            .leaseRenewInterval(Duration.ofMillis(200)).faults(faults).build()) {
      List<UUID> ids = ids(TransportSide.append(env, f.topic, 6, i -> "{}"));
      TransportSide.publishAll(env, relay);
      consumer.start();
      ConsumerTestKit.await("every worker dead", DEADLINE, () -> consumer.health().status() == Health.Status.DOWN);
      Health down = consumer.health();
      assertThat(down.reasons()).extracting(Health.Reason::code).containsExactly("worker-dead");
      assertThat(down.reasons().get(0).message()).contains(consumer.config().workerName(0), "is dead");
      ConsumerTestKit.await("a replacement", DEADLINE, () -> logs.warnings().stream()
          .filter(l -> l.startsWith("ERROR") && l.contains("died; starting a new thread")).count() >= 2);

      crashing.set(false);
      ConsumerTestKit.awaitProcessed(consumer, ids, DEADLINE);
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      assertThat(f.effectCount("g")).isEqualTo(6);
      assertThat(f.doubleEffects("g")).isZero();
      assertThat(consumer.status().deadLetters()).isZero();
    }
  }

  @Test
  void redisStoppedIsRedisUnreachableUntilItIsBack() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    Fixture f = new Fixture(env, "health-redis", redis, server.uri());
    try (Relay relay = Relay.builder(env.dataSource(), env.specOf(redis)).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic(TopicConfig.of(f.topic)).build();
        StreamConsumer consumer = f.consumer("g").workers(2).build()) {
      List<UUID> first = ids(TransportSide.append(env, f.topic, 5, i -> "{}"));
      TransportSide.publishAll(env, relay);
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, first, DEADLINE);
      assertThat(consumer.health()).isEqualTo(Health.UP);

      server.stop();
      ConsumerTestKit.await("redis-unreachable", DEADLINE, () -> consumer.health().has("redis-unreachable"));
      Health down = consumer.health();
      assertThat(down.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(down.reasons()).extracting(Health.Reason::code).containsOnly("redis-unreachable");

      server.startAgain();
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      List<UUID> after = ids(TransportSide.append(env, f.topic, 5, i -> "{}"));
      TransportSide.publishAll(env, relay);
      ConsumerTestKit.awaitProcessed(consumer, after, DEADLINE);
      assertThat(f.effectCount("g")).isEqualTo(10);
      assertThat(f.doubleEffects("g")).isZero();
    } finally {
      redis.close();
    }
  }

  @Test
  void aDroppedTableIsDatabaseUnreachableUntilItIsBack() throws Exception {
    Fixture f = new Fixture(env, "health-db");
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer("g").build()) {
      consumer.start();
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      env.execute("DROP TABLE " + f.effects);
      List<UUID> ids = ids(TransportSide.append(env, f.topic, 5, i -> "{}"));
      TransportSide.publishAll(env, relay);
      ConsumerTestKit.await("database-unreachable", DEADLINE, () -> consumer.health().has("database-unreachable"));
      Health h = consumer.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(h.reasons()).extracting(Health.Reason::code).containsExactly("database-unreachable");
      assertThat(h.reasons().get(0).message()).contains("does not exist");

      env.execute("CREATE TABLE " + f.effects
          + " (id bigserial PRIMARY KEY, consumer_group text NOT NULL, message_id uuid NOT NULL, tag text)");
      ConsumerTestKit.awaitProcessed(consumer, ids, DEADLINE);
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      assertThat(f.effectCount("g")).isEqualTo(5);
      assertThat(consumer.status().deadLetters()).isZero();
    }
  }

  @Test
  void aHandlerAskingToRetryLaterIsAnInfrastructurePause() throws Exception {
    Fixture f = new Fixture(env, "health-later");
    AtomicBoolean paused = new AtomicBoolean(true);
    MessageHandler effect = f.effect("g", null);
    MessageHandler handler = (tx, m) -> {
      if (paused.get()) {
        throw new RetryLaterException("the payment provider is in maintenance");
      }
      effect.handle(tx, m);
    };
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer("g").handler(handler).build()) {
      List<UUID> ids = ids(TransportSide.append(env, f.topic, 3, i -> "{}"));
      TransportSide.publishAll(env, relay);
      consumer.start();
      ConsumerTestKit.await("infrastructure-pause", DEADLINE, () -> consumer.health().has("infrastructure-pause"));
      Health h = consumer.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(h.reasons()).extracting(Health.Reason::code).containsExactly("infrastructure-pause");
      assertThat(h.reasons().get(0).message()).contains("the payment provider is in maintenance");

      paused.set(false);
      ConsumerTestKit.awaitProcessed(consumer, ids, DEADLINE);
      ConsumerTestKit.await("health UP", DEADLINE, () -> consumer.health().status() == Health.Status.UP);
      assertThat(f.effectCount("g")).isEqualTo(3);
    }
  }

  @Test
  void aPolledConsumerIsNotStartedAndAClosedOneIsClosed() {
    Fixture f = new Fixture(env, "health-polled");
    StreamConsumer consumer = f.consumer("g").build();
    consumer.pollOnce();
    assertThat(consumer.health().status()).isEqualTo(Health.Status.DOWN);
    assertThat(consumer.health().reasons()).extracting(Health.Reason::code).containsExactly("not-started");
    consumer.close();
    assertThat(consumer.health().reasons()).extracting(Health.Reason::code).containsExactly("closed");
  }

  private HandoffConsumer consumer(Transport transport, Fixture f, String group, ConsumerFaults faults) {
    // minIdle and the heartbeat TTL well past the test: no other worker takes over the killed one's entries.
    if (transport == Transport.STREAM) {
      return f.consumer(group).workers(2).batchSize(2).minIdle(Duration.ofSeconds(60))
          .leaseRenewInterval(Duration.ofMillis(200)).faults(faults).build();
    }
    return TransportSide.listConsumer(env, f, group).handler(f.effect(group, null)).workers(2).batchSize(2)
        .heartbeatTtl(Duration.ofSeconds(60)).heartbeatInterval(Duration.ofMillis(200)).faults(faults).build();
  }

  private static List<UUID> ids(List<AppendedMessage> appended) {
    return appended.stream().map(AppendedMessage::messageId).toList();
  }
}
