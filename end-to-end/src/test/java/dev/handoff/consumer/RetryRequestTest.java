package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.admin.RetryRequestResult;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.consumer.status.DeadLetter.State;
import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.params.XAddParams;

/**
 * Dead-letter retries requested from outside the consumer ({@link DeadLetterAdmin#requestRetry}, what
 * {@code handoff dlq retry} calls): the request is a database row, the running consumers of the group run it
 * through their own handler, once, and nothing is written to Redis.
 */
@HandoffTest
class RetryRequestTest {

  private static final Duration DEADLINE = Duration.ofSeconds(20);

  private final TestEnvironment env;
  private final Set<UUID> failing = ConcurrentHashMap.newKeySet();
  private final Set<UUID> environmentDown = ConcurrentHashMap.newKeySet();
  private final Map<UUID, AtomicInteger> attempts = new ConcurrentHashMap<>();

  RetryRequestTest(TestEnvironment env) {
    this.env = env;
  }

  private DeadLetterAdmin admin() {
    return DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build();
  }

  /** The fixture's effect, counting every attempt per message, failing for the messages in {@link #failing}. */
  private MessageHandler handler(Fixture f, String group) {
    MessageHandler effect = f.effect(group, null);
    return (tx, m) -> {
      attempts.computeIfAbsent(m.messageId(), id -> new AtomicInteger()).incrementAndGet();
      if (environmentDown.contains(m.messageId())) {
        throw new RetryLaterException("the card processor is unreachable");
      }
      if (failing.contains(m.messageId())) {
        throw new IllegalStateException("cannot book payment " + m.key());
      }
      effect.handle(tx, m);
    };
  }

  private int attempts(UUID id) {
    AtomicInteger n = attempts.get(id);
    return n == null ? 0 : n.get();
  }

  private StreamConsumerBuilder consumer(Fixture f, String group) {
    return f.consumer(group).handler(handler(f, group)).maxDeliveries(1)
        .retryRequestInterval(Duration.ofMillis(20));
  }

  /** Publishes {@code n} messages, of which {@code poison} fail, and drains them with a polled consumer. */
  private List<StreamMessage> deadLettered(Fixture f, String group, int n, int poison) {
    List<StreamMessage> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      StreamMessage m = f.message();
      f.publish(m);
      if (i < poison) {
        failing.add(m.messageId());
        out.add(m);
      }
    }
    try (StreamConsumer c = consumer(f, group).build()) {
      ConsumerTestKit.drain(c, DEADLINE);
    }
    assertThat(f.inboxCount(group, "dead")).isEqualTo(poison);
    return out;
  }

  private DeadLetter deadLetterOf(String group, UUID messageId) {
    return admin().list(group, DeadLetterSelection.all(), 1_000).stream()
        .filter(d -> messageId.equals(d.messageId())).findFirst().orElseThrow();
  }

  @Test
  void aRequestedRetryIsRunOnceByTheRunningConsumerAndTheStreamsGainNoEntry() {
    Fixture f = new Fixture(env, "dlq-running");
    TopicConfig topic = TopicConfig.of(f.topic).withShards(2);
    StreamMessage poison = null;
    for (int i = 0; i < 10; i++) {
      StreamMessage m = f.message();
      f.publish(m, null, i % 2);
      if (i == 5) {
        poison = m;
        failing.add(m.messageId());
      }
    }
    UUID poisonId = poison.messageId();
    try (StreamConsumer consumer = consumer(f, "billing").topic(topic).build()) {
      consumer.start();
      ConsumerTestKit.await("the poison message is dead-lettered", DEADLINE,
          () -> consumer.status().deadLetters() == 1);
      ConsumerTestKit.awaitDrained(consumer, DEADLINE);
      long[] lengths = {env.redis().xlen(f.streamKey(0)), env.redis().xlen(f.streamKey(1))};
      assertThat(lengths).containsExactly(5, 5);
      DeadLetter dead = deadLetterOf("billing", poisonId);
      assertThat(dead.state()).isEqualTo(State.DEAD);
      assertThat(attempts(poisonId)).isEqualTo(1);

      failing.clear(); // the fix ships
      RetryRequestResult r = admin().requestRetry("billing", DeadLetterSelection.id(dead.id()));
      assertThat(r).isEqualTo(new RetryRequestResult(1, 0));
      ConsumerTestKit.await("the running consumer retries the dead letter", DEADLINE,
          () -> admin().show(dead.id()).orElseThrow().state() == State.RETRIED);

      assertThat(attempts(poisonId)).isEqualTo(2);
      assertThat(f.effectCount("billing", poisonId)).isEqualTo(1);
      assertThat(f.effectCount("billing")).isEqualTo(10);
      assertThat(f.doubleEffects("billing")).isZero();
      assertThat(f.inboxCount("billing", "processed")).isEqualTo(10);
      assertThat(f.inboxCount("billing", "dead")).isZero();
      DeadLetter retried = admin().show(dead.id()).orElseThrow();
      assertThat(retried.status()).isEqualTo("retried");
      assertThat(retried.retry().retriedAt()).isNotNull();
      assertThat(retried.retry().requestedAt()).isNull();
      assertThat(consumer.status().deadLetters()).isZero();
      assertThat(new long[] {env.redis().xlen(f.streamKey(0)), env.redis().xlen(f.streamKey(1))})
          .containsExactly(lengths);
      assertThat(f.pendingTotal("billing", 0) + f.pendingTotal("billing", 1)).isZero();
      // a second request of a retried letter is refused by id and matches nothing otherwise
      assertThatThrownBy(() -> admin().requestRetry("billing", DeadLetterSelection.id(dead.id())))
          .isInstanceOf(ConsumerException.class)
          .hasMessage("dead letter " + dead.id() + " of consumer group 'billing' was already retried at "
              + retried.retry().retriedAt());
      assertThat(admin().requestRetry("billing", DeadLetterSelection.all())).isEqualTo(new RetryRequestResult(0, 0));
    }
    assertThat(attempts(poisonId)).isEqualTo(2);
  }

  @Test
  void aRequestWhoseHandlerStillFailsIsRecordedClearedAndRunOncePerRequest() {
    Fixture f = new Fixture(env, "dlq-still-failing");
    UUID poison = deadLettered(f, "g", 3, 1).get(0).messageId();
    DeadLetter dead = deadLetterOf("g", poison);
    try (StreamConsumer consumer = consumer(f, "g").build()) {
      assertThat(consumer.maintainOnce()).isZero();
      assertThat(admin().requestRetry("g", DeadLetterSelection.id(dead.id()))).isEqualTo(new RetryRequestResult(1, 0));
      assertThat(admin().show(dead.id()).orElseThrow().state()).isEqualTo(State.RETRY_REQUESTED);

      assertThat(consumer.maintainOnce()).isEqualTo(1);
      assertThat(attempts(poison)).isEqualTo(2);
      DeadLetter failed = admin().show(dead.id()).orElseThrow();
      assertThat(failed.state()).isEqualTo(State.RETRY_FAILED);
      assertThat(failed.status()).isEqualTo("dead");
      assertThat(failed.retryable()).isTrue();
      assertThat(failed.retry().requestedAt()).isNull();
      assertThat(failed.retry().failedAt()).isNotNull();
      assertThat(failed.retry().error()).contains("IllegalStateException: cannot book payment");
      assertThat(failed.error()).isEqualTo(dead.error());
      assertThat(f.inboxCount("g", "dead")).isEqualTo(1);
      assertThat(f.effectCount("g", poison)).isZero();

      // no loop: the request was cleared
      assertThat(consumer.maintainOnce()).isZero();
      assertThat(attempts(poison)).isEqualTo(2);
      // another request, another single run
      assertThat(admin().requestRetry("g", DeadLetterSelection.all())).isEqualTo(new RetryRequestResult(1, 0));
      assertThat(consumer.maintainOnce()).isEqualTo(1);
      assertThat(attempts(poison)).isEqualTo(3);
      DeadLetter failedTwice = admin().show(dead.id()).orElseThrow();
      assertThat(failedTwice.state()).isEqualTo(State.RETRY_FAILED);

      // a failure of the environment is not the message's: the request stays for the next turn, nothing recorded
      failing.clear();
      environmentDown.add(poison);
      admin().requestRetry("g", DeadLetterSelection.id(dead.id()));
      assertThat(consumer.maintainOnce()).isZero();
      assertThat(attempts(poison)).isEqualTo(4);
      DeadLetter postponed = admin().show(dead.id()).orElseThrow();
      assertThat(postponed.state()).isEqualTo(State.RETRY_REQUESTED);
      assertThat(postponed.retry().failedAt()).isEqualTo(failedTwice.retry().failedAt());
      assertThat(postponed.retry().error()).isEqualTo(failedTwice.retry().error());
      assertThat(f.inboxCount("g", "dead")).isEqualTo(1);

      // and once it is fixed, the same request commits its effect once
      environmentDown.clear();
      assertThat(consumer.maintainOnce()).isEqualTo(1);
      assertThat(attempts(poison)).isEqualTo(5);
      assertThat(admin().show(dead.id()).orElseThrow().state()).isEqualTo(State.RETRIED);
      assertThat(f.effectCount("g", poison)).isEqualTo(1);
      assertThat(f.inboxCount("g", "dead")).isZero();
    }
  }

  @Test
  void twoRunningConsumersOfTheGroupHandleEachRequestOnce() {
    Fixture f = new Fixture(env, "dlq-two");
    List<StreamMessage> poison = deadLettered(f, "two", 20, 8);
    failing.clear();
    try (StreamConsumer a = consumer(f, "two").build(); StreamConsumer b = consumer(f, "two").build()) {
      a.start();
      b.start();
      assertThat(admin().requestRetry("two", DeadLetterSelection.all())).isEqualTo(new RetryRequestResult(8, 0));
      ConsumerTestKit.await("every requested retry ran", DEADLINE, () -> admin()
          .list("two", DeadLetterSelection.all(), 100).stream().allMatch(d -> d.state() == State.RETRIED));
    }
    for (StreamMessage m : poison) {
      assertThat(attempts(m.messageId())).as("attempts of %s", m.messageId()).isEqualTo(2);
      assertThat(f.effectCount("two", m.messageId())).isEqualTo(1);
    }
    assertThat(f.effectCount("two")).isEqualTo(20);
    assertThat(f.doubleEffects("two")).isZero();
    assertThat(f.inboxCount("two", "processed")).isEqualTo(20);
    assertThat(env.redis().xlen(f.streamKey())).isEqualTo(20);
  }

  @Test
  void listShowsEveryStateAndUndecodableEntriesCannotBeRequested() {
    Fixture f = new Fixture(env, "dlq-states");
    List<StreamMessage> poison = deadLettered(f, "s", 6, 4);
    String undecodable = new String(f.redis.xadd(f.streamKey().getBytes(StandardCharsets.UTF_8),
        XAddParams.xAddParams(), Map.of("v".getBytes(StandardCharsets.UTF_8), "99".getBytes(StandardCharsets.UTF_8))),
        StandardCharsets.UTF_8);
    try (StreamConsumer consumer = consumer(f, "s").build()) {
      assertThat(consumer.pollOnce().deadLettered()).isEqualTo(1);
      DeadLetter retried = deadLetterOf("s", poison.get(0).messageId());
      DeadLetter requested = deadLetterOf("s", poison.get(1).messageId());
      DeadLetter failedAgain = deadLetterOf("s", poison.get(2).messageId());
      DeadLetter malformed = admin().list("s", DeadLetterSelection.all(), 100).stream()
          .filter(d -> d.delivery().streamId().equals(undecodable)).findFirst().orElseThrow();

      admin().requestRetry("s", DeadLetterSelection.id(failedAgain.id()));
      assertThat(consumer.maintainOnce()).isEqualTo(1);
      failing.remove(poison.get(0).messageId());
      assertThat(consumer.retry(retried.id())).isTrue();
      admin().requestRetry("s", DeadLetterSelection.id(requested.id()));

      assertThatThrownBy(() -> admin().requestRetry("s", DeadLetterSelection.id(malformed.id())))
          .isInstanceOf(ConsumerException.class)
          .hasMessageStartingWith("dead letter " + malformed.id() + " of consumer group 's' cannot be retried: its"
              + " entry could not be decoded or was lost, so the message is not stored (malformed: field 'v'");
      assertThatThrownBy(() -> admin().requestRetry("other", DeadLetterSelection.id(requested.id())))
          .isInstanceOf(ConsumerException.class).hasMessage("no dead letter " + requested.id()
              + " in consumer group 'other'");
      long plainDead = deadLetterOf("s", poison.get(3).messageId()).id();
      Map<Long, State> states = admin().list("s", DeadLetterSelection.all(), 100).stream()
          .collect(Collectors.toMap(DeadLetter::id, DeadLetter::state));
      assertThat(states).containsOnly(
          Map.entry(retried.id(), State.RETRIED),
          Map.entry(requested.id(), State.RETRY_REQUESTED),
          Map.entry(failedAgain.id(), State.RETRY_FAILED),
          Map.entry(plainDead, State.DEAD),
          Map.entry(malformed.id(), State.DEAD));
      List<DeadLetter> newestFirst = admin().list("s", DeadLetterSelection.all(), 2);
      assertThat(newestFirst).extracting(DeadLetter::id).containsExactly(malformed.id(), plainDead);
      assertThat(admin().list(null, DeadLetterSelection.id(requested.id()), 10)).extracting(DeadLetter::group)
          .containsExactly("s");
      assertThat(admin().show(Long.MAX_VALUE)).isEmpty();

      // by selection, the undecodable one is counted and left, the retried one is not touched, and the one
      // already requested counts once
      assertThat(admin().requestRetry("s", DeadLetterSelection.all())).isEqualTo(new RetryRequestResult(3, 1));
      assertThat(admin().show(plainDead).orElseThrow().state()).isEqualTo(State.RETRY_REQUESTED);
      assertThat(admin().show(failedAgain.id()).orElseThrow().state()).isEqualTo(State.RETRY_REQUESTED);
      assertThat(admin().show(malformed.id()).orElseThrow().state()).isEqualTo(State.DEAD);
      assertThat(admin().show(retried.id()).orElseThrow().state()).isEqualTo(State.RETRIED);
    }
  }

  @Test
  void purgeByIdAllAndSinceDeletesExactlyTheRowsAndKeepsTheDeadMarkers() {
    Fixture f = new Fixture(env, "dlq-purge");
    List<StreamMessage> p = deadLettered(f, "p", 10, 6);
    // group q dead-letters the same six (the handler fails for them in every group)
    try (StreamConsumer q = consumer(f, "q").build()) {
      ConsumerTestKit.drain(q, DEADLINE);
    }
    assertThat(f.inboxCount("q", "dead")).isEqualTo(6);
    env.execute("UPDATE " + env.schema() + ".dead_letter SET dead_at = now() - interval '3 hours'"
        + " WHERE consumer_group = 'p' AND message_id IN ('" + p.get(0).messageId() + "', '" + p.get(1).messageId()
        + "', '" + p.get(2).messageId() + "')");
    DeadLetterAdmin admin = admin();

    long one = deadLetterOf("p", p.get(3).messageId()).id();
    assertThat(admin.purge("p", DeadLetterSelection.id(one))).isEqualTo(1);
    assertThatThrownBy(() -> admin.purge("p", DeadLetterSelection.id(one)))
        .isInstanceOf(ConsumerException.class).hasMessage("no dead letter " + one + " in consumer group 'p'");
    assertThat(admin.purge("p", DeadLetterSelection.deadSince(Instant.now().minus(Duration.ofHours(1)))))
        .isEqualTo(2);
    assertThat(admin.list("p", DeadLetterSelection.all(), 100)).extracting(DeadLetter::messageId)
        .containsExactlyInAnyOrder(p.get(0).messageId(), p.get(1).messageId(), p.get(2).messageId());
    assertThat(admin.purge("p", DeadLetterSelection.all())).isEqualTo(3);
    assertThat(admin.list("p", DeadLetterSelection.all(), 100)).isEmpty();
    assertThat(admin.list("q", DeadLetterSelection.all(), 100)).hasSize(6);
    // the markers stay dead: a replay of every entry is a duplicate and runs no handler
    assertThat(f.inboxCount("p", "dead")).isEqualTo(6);
    int before = attempts.values().stream().mapToInt(AtomicInteger::get).sum();
    try (StreamConsumer c = consumer(f, "p").build()) {
      PollResult replay = ConsumerTestKit.assertReplayChangesNothing(c);
      assertThat(replay.duplicates()).isEqualTo(10);
    }
    assertThat(attempts.values().stream().mapToInt(AtomicInteger::get).sum()).isEqualTo(before);
    long ofQ = deadLetterOf("q", p.get(5).messageId()).id();
    assertThat(admin.purge(null, DeadLetterSelection.id(ofQ))).isEqualTo(1);
    assertThat(admin.purge("q", DeadLetterSelection.all())).isEqualTo(5);
    assertThat(admin.list("q", DeadLetterSelection.all(), 100)).isEmpty();
    assertThat(f.inboxCount("q", "dead")).isEqualTo(6);
  }

  @Test
  void aRequestedRetryOnTheListTransportRunsOnceAndPushesNothing() throws Exception {
    Fixture f = new Fixture(env, "dlq-list");
    List<UUID> ids = TransportSide.append(env, f.topic, 5, i -> i == 2 ? "poison" : "p" + i).stream()
        .map(dev.handoff.outbox.AppendedMessage::messageId).toList();
    UUID poison = ids.get(2);
    failing.add(poison);
    String list = ListFormat.listKey(env.keyPrefix(), f.topic, 0);
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.LIST).build();
        ListConsumer consumer = TransportSide.listConsumer(env, f, "lg").handler(handler(f, "lg")).maxDeliveries(1)
            .retryRequestInterval(Duration.ofMillis(20)).build()) {
      TransportSide.publishAll(env, relay);
      consumer.start();
      ConsumerTestKit.await("the poison message is dead-lettered", DEADLINE,
          () -> consumer.status().deadLetters() == 1);
      ConsumerTestKit.awaitDrained(consumer, DEADLINE);
      assertThat(env.redis().llen(list)).isZero();
      failing.clear();
      DeadLetter dead = deadLetterOf("lg", poison);
      assertThat(admin().requestRetry("lg", DeadLetterSelection.id(dead.id()))).isEqualTo(new RetryRequestResult(1, 0));
      ConsumerTestKit.await("the running list consumer retries the dead letter", DEADLINE,
          () -> admin().show(dead.id()).orElseThrow().state() == State.RETRIED);
      assertThat(env.redis().llen(list)).isZero();
      assertThat(consumer.status().drained()).isTrue();
    }
    assertThat(attempts(poison)).isEqualTo(2);
    assertThat(f.effectCount("lg", poison)).isEqualTo(1);
    assertThat(f.effectCount("lg")).isEqualTo(5);
    assertThat(f.doubleEffects("lg")).isZero();
    assertThat(f.inboxCount("lg", "processed")).isEqualTo(5);
  }

  @Test
  void theOperatorRoleRequestsAndPurgesAndTheConsumerRoleRunsTheRequests() {
    Fixture f = new Fixture(env, "dlq-roles");
    List<StreamMessage> poison = deadLettered(f, "r", 4, 2);
    String effects = env.schema() + "." + f.effects;
    DataSource operatorDb = env.newRole().grant(Role.OPERATOR).newDataSource(2);
    DataSource consumerDb = env.newRole().grant(Role.CONSUMER)
        .execute("GRANT INSERT ON " + effects + " TO ROLE; GRANT USAGE ON SEQUENCE " + effects + "_id_seq TO ROLE")
        .newDataSource(2);
    DeadLetterAdmin operator = DeadLetterAdmin.builder(operatorDb).schema(env.schema()).build();
    try (StreamConsumer consumer = StreamConsumer.builder(consumerDb, RedisConnectionSpec.of(f.redisUri)).schema(env.schema())
        .keyPrefix(env.keyPrefix()).topic(f.topic).group("r").handler(handler(f, "r")).build()) {
      assertThat(operator.requestRetry("r", DeadLetterSelection.all())).isEqualTo(new RetryRequestResult(2, 0));
      failing.remove(poison.get(0).messageId());
      assertThat(consumer.maintainOnce()).isEqualTo(2);
    }
    assertThat(deadLetterOf("r", poison.get(0).messageId()).state()).isEqualTo(State.RETRIED);
    assertThat(deadLetterOf("r", poison.get(1).messageId()).state()).isEqualTo(State.RETRY_FAILED);
    assertThat(f.effectCount("r")).isEqualTo(3);
    assertThat(operator.purge("r", DeadLetterSelection.all())).isEqualTo(2);
    assertThat(f.inboxCount("r", "dead")).isEqualTo(1);
  }
}
