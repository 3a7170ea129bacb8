package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.params.XAddParams;

@HandoffTest
class DeadLetterTest {

  private final TestEnvironment env;

  DeadLetterTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void poisonMessageIsDeadLetteredAfterMaxDeliveriesWhileAThousandOthersFlowAndRetryAfterTheFixGivesOneEffect() {
    Fixture f = new Fixture(env, "poison");
    List<StreamMessage> before = f.publishMany(500);
    StreamMessage poison = f.message();
    String poisonId = f.publish(poison);
    List<StreamMessage> after = f.publishMany(500);
    AtomicBoolean fixed = new AtomicBoolean();
    AtomicInteger poisonAttempts = new AtomicInteger();
    MessageHandler effect = f.effect("ledger", null);
    StreamConsumer consumer = f.consumer("ledger")
        .workers(2)
        .batchSize(100)
        .maxDeliveries(3)
        .minIdle(Duration.ofMillis(500))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(50))
        .handler((tx, m) -> {
          if (m.messageId().equals(poison.messageId())) {
            poisonAttempts.incrementAndGet();
            if (!fixed.get()) {
              throw new IllegalArgumentException("amount must be positive for payment " + m.key());
            }
          }
          effect.handle(tx, m);
        })
        .build();
    try (consumer) {
      consumer.start();
      ConsumerTestKit.await("the poison message is dead-lettered", Duration.ofSeconds(20),
          () -> consumer.status().deadLetters() == 1);
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));

      assertThat(poisonAttempts).hasValue(3);
      assertThat(f.effectCount("ledger")).isEqualTo(1000);
      assertThat(f.doubleEffects("ledger")).isZero();
      assertThat(f.effectCount("ledger", poison.messageId())).isZero();
      for (StreamMessage m : List.of(before.get(0), before.get(499), after.get(0), after.get(499))) {
        assertThat(f.effectCount("ledger", m.messageId())).isEqualTo(1);
      }
      assertThat(f.inboxCount("ledger", "processed")).isEqualTo(1000);
      assertThat(f.inboxCount("ledger", "dead")).isEqualTo(1);
      assertThat(f.pendingTotal("ledger")).isZero();
      List<DeadLetter> dead = consumer.deadLetters(10);
      assertThat(dead).hasSize(1);
      DeadLetter d = dead.get(0);
      assertThat(d.messageId()).isEqualTo(poison.messageId());
      assertThat(d.delivery().streamId()).isEqualTo(poisonId);
      assertThat(d.delivery().streamKey()).isEqualTo(f.streamKey());
      assertThat(d.delivery().count()).isEqualTo(3);
      assertThat(d.error()).contains("IllegalArgumentException: amount must be positive for payment");
      assertThat(d.status()).isEqualTo("dead");
      assertThat(d.retryable()).isTrue();

      // the fix ships; the operator retries
      fixed.set(true);
      assertThat(consumer.retry(d.id())).isTrue();
      assertThat(consumer.retry(d.id())).isFalse();
      assertThat(consumer.retryAll()).isZero();
      assertThat(poisonAttempts).hasValue(4);
      assertThat(f.effectCount("ledger", poison.messageId())).isEqualTo(1);
      assertThat(f.inboxCount("ledger", "processed")).isEqualTo(1001);
      assertThat(f.inboxCount("ledger", "dead")).isZero();
      assertThat(consumer.deadLetters(10).get(0).status()).isEqualTo("retried");
      assertThat(consumer.status().deadLetters()).isZero();

      // and a replay of the whole stream still changes nothing
      ConsumerTestKit.assertReplayChangesNothing(consumer);
    }
    assertThat(f.effectCount("ledger")).isEqualTo(1001);
  }

  @Test
  void malformedEntriesAreDeadLetteredAtOnceWithTheirReason() {
    Fixture f = new Fixture(env, "malformed");
    StreamMessage good = f.message();
    f.publish(good);
    UUID brokenId = UUID.randomUUID();
    Map<byte[], byte[]> noOutboxId = new LinkedHashMap<>(StreamFormat.encode(f.message()));
    noOutboxId.clear();
    noOutboxId.put(b("v"), b("1"));
    noOutboxId.put(b("message_id"), b(brokenId.toString()));
    noOutboxId.put(b("topic"), b("malformed"));
    noOutboxId.put(b("payload"), b("{}"));
    String missingFieldId = new String(f.redis.xadd(b(f.streamKey()), XAddParams.xAddParams(), noOutboxId),
        StandardCharsets.UTF_8);
    String futureVersionId = new String(f.redis.xadd(b(f.streamKey()), XAddParams.xAddParams(),
        Map.of(b("v"), b("99"), b("blob"), b("?"))), StandardCharsets.UTF_8);
    AtomicInteger calls = new AtomicInteger();
    MessageHandler effect = f.effect("m", null);
    try (StreamConsumer consumer = f.consumer("m").handler((tx, m) -> {
      calls.incrementAndGet();
      effect.handle(tx, m);
    }).build()) {
      PollResult r = consumer.pollOnce();
      assertThat(r.read()).isEqualTo(3);
      assertThat(r.handled()).isEqualTo(1);
      assertThat(r.deadLettered()).isEqualTo(2);
      assertThat(calls).hasValue(1);
      assertThat(f.pendingTotal("m")).isZero();

      List<DeadLetter> dead = consumer.deadLetters(10);
      assertThat(dead).hasSize(2);
      DeadLetter version = dead.get(0);
      DeadLetter missing = dead.get(1);
      assertThat(missing.delivery().streamId()).isEqualTo(missingFieldId);
      assertThat(missing.messageId()).isEqualTo(brokenId);
      assertThat(missing.delivery().count()).isEqualTo(1);
      assertThat(missing.error()).startsWith("malformed: field 'outbox_id'");
      assertThat(version.delivery().streamId()).isEqualTo(futureVersionId);
      assertThat(version.messageId()).isNull();
      assertThat(version.error()).startsWith("malformed: field 'v'").contains("'99' is not supported");
      assertThat(version.retryable()).isFalse();
      // a malformed entry with a readable message ID is fenced too: the marker says dead
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'm' AND message_id = ?"
          + " AND outcome = 'dead'", brokenId)).isEqualTo(1);
      assertThatThrownBy(() -> consumer.retry(version.id()))
          .isInstanceOf(ConsumerException.class)
          .hasMessageContaining("cannot be retried");
    }
  }

  @Test
  void batchHandlerFailureIsBisectedDownToThePoisonWhileTheOthersCommitOnce() {
    Fixture f = new Fixture(env, "bisect");
    List<StreamMessage> messages = f.publishMany(40);
    StreamMessage poison = messages.get(17);
    AtomicInteger calls = new AtomicInteger();
    try (StreamConsumer consumer = f.consumerWithoutHandler("b")
        .batchSize(40)
        .maxDeliveries(2)
        .minIdle(Duration.ofMillis(500))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(50))
        .batchHandler((tx, batch) -> {
          calls.incrementAndGet();
          try (var ps = tx.prepareStatement(
              "INSERT INTO " + f.effects + " (consumer_group, message_id, tag) VALUES ('b', ?, 'batch')")) {
            for (InboundMessage m : batch) {
              if (m.messageId().equals(poison.messageId())) {
                throw new IllegalStateException("cannot book " + m.messageId());
              }
              ps.setObject(1, m.messageId());
              ps.addBatch();
            }
            ps.executeBatch();
          }
        })
        .build()) {
      PollResult first = consumer.pollOnce();
      assertThat(first.handled()).isEqualTo(39);
      assertThat(first.failed()).isEqualTo(1);
      // 40 -> 20 + 20 -> the poison's half 10 + 10 -> 5 + 5 -> ... -> 1: a handful of calls, not 40
      assertThat(calls.get()).isBetween(3, 14);
      assertThat(f.effectCount("b")).isEqualTo(39);
      assertThat(f.pending("b")).hasSize(1);
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      assertThat(consumer.deadLetters(5)).hasSize(1).allSatisfy(d -> {
        assertThat(d.messageId()).isEqualTo(poison.messageId());
        assertThat(d.delivery().count()).isEqualTo(2);
        assertThat(d.error()).contains("cannot book");
      });
    }
    assertThat(f.effectCount("b")).isEqualTo(39);
    assertThat(f.doubleEffects("b")).isZero();
    assertThat(f.effectCount("b", poison.messageId())).isZero();
    assertThat(f.pendingTotal("b")).isZero();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
