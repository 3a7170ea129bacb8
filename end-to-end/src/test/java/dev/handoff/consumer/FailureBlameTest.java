package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Whose fault a failure is decides what it costs. Conflicts between transactions are run again at once; a handler's
 * {@link RetryLaterException} pauses the worker; neither counts a delivery. A message whose own data breaks a
 * constraint is still a failed delivery and still ends in the dead letters. Every error here is raised by the real
 * server with its real SQLSTATE.
 */
@HandoffTest
class FailureBlameTest {

  private final TestEnvironment env;

  FailureBlameTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void serializationFailuresAndDeadlocksAreRunAgainAtOnceWithoutCountingADelivery() {
    Fixture f = new Fixture(env, "conflict");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    UUID serialization = messages.get(1).messageId();
    UUID deadlock = messages.get(3).messageId();
    Map<UUID, AtomicInteger> attempts = new ConcurrentHashMap<>();
    MessageHandler effect = f.effect("conflict", null);
    OutcomeCounts events = new OutcomeCounts();
    try (StreamConsumer consumer = f.consumer("conflict").maxDeliveries(1).listener(events).handler((tx, m) -> {
      int attempt = attempts.computeIfAbsent(m.messageId(), k -> new AtomicInteger()).incrementAndGet();
      if (m.messageId().equals(serialization) && attempt <= 2) {
        raise(tx, "40001", "could not serialize access due to concurrent update");
      }
      if (m.messageId().equals(deadlock) && attempt == 1) {
        raise(tx, "40P01", "deadlock detected");
      }
      effect.handle(tx, m);
    }).build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.handled()).isEqualTo(5);
      assertThat(r.failed()).isZero();
      assertThat(r.deadLettered()).isZero();
      // each conflict runs the whole batch's transaction again: twice for the first, once for the deadlock
      assertThat(attempts.get(serialization)).hasValue(4);
      assertThat(attempts.get(deadlock)).hasValue(2);
      assertThat(attempts.get(messages.get(0).messageId())).hasValue(4);
      assertThat(events.failed).hasValue(0);
      assertThat(f.effectCount("conflict")).isEqualTo(5);
      assertThat(f.doubleEffects("conflict")).isZero();
      assertThat(f.pendingTotal("conflict")).isZero();
      assertThat(consumer.status().deadLetters()).isZero();
    }
  }

  @Test
  void aHandlersRetryLaterPausesTheWorkerCountsNoDeliveryAndNeverDeadLetters() {
    Fixture f = new Fixture(env, "later");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    UUID busy = messages.get(0).messageId();
    AtomicInteger busyAttempts = new AtomicInteger();
    MessageHandler effect = f.effect("later", null);
    OutcomeCounts events = new OutcomeCounts();
    try (StreamConsumer consumer = f.consumer("later").maxDeliveries(1).listener(events).handler((tx, m) -> {
      if (m.messageId().equals(busy) && busyAttempts.incrementAndGet() <= 3) {
        throw new RetryLaterException("the card network is down");
      }
      effect.handle(tx, m);
    }).build()) {
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, messages.stream().map(StreamMessage::messageId).toList(),
          Duration.ofSeconds(20));
      // the worker reports its resumption after the step that committed returns: wait for it, not for the commit
      ConsumerTestKit.await("the worker resumed", Duration.ofSeconds(20), () -> events.resumed.get() == 1);

      assertThat(busyAttempts).hasValue(4);
      assertThat(events.failed).hasValue(0);
      assertThat(events.paused).hasValue(1);
      assertThat(events.resumed).hasValue(1);
      assertThat(consumer.status().paused()).isEmpty();
      assertThat(consumer.status().deadLetters()).isZero();
      assertThat(f.effectCount("later")).isEqualTo(3);
      assertThat(f.doubleEffects("later")).isZero();
    }
  }

  @Test
  void aMessageThatBreaksAConstraintIsStillAFailedDeliveryAndEndsInTheDeadLetters() {
    Fixture f = new Fixture(env, "constraint");
    env.execute("CREATE TABLE charge_constraint (message_id uuid PRIMARY KEY, amount int NOT NULL CHECK (amount > 0))");
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    UUID negative = messages.get(1).messageId();
    OutcomeCounts events = new OutcomeCounts();
    try (StreamConsumer consumer = f.consumer("constraint").maxDeliveries(2).minIdle(Duration.ofMillis(500))
        .listener(events).handler((tx, m) -> {
          try (PreparedStatement ps =
              tx.prepareStatement("INSERT INTO charge_constraint (message_id, amount) VALUES (?, ?)")) {
            ps.setObject(1, m.messageId());
            ps.setInt(2, m.messageId().equals(negative) ? -5 : 5);
            ps.executeUpdate();
          }
        }).build()) {
      consumer.start();
      ConsumerTestKit.await("the message with a negative amount is dead-lettered", Duration.ofSeconds(20),
          () -> consumer.status().deadLetters() == 1);
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));
      // The worker reports a batch to the listener after acknowledging it: drained can be seen before the report.
      ConsumerTestKit.await("the failure and the dead letter reported to the listener", Duration.ofSeconds(20),
          () -> events.failed.get() >= 1 && events.deadLettered.get() >= 1);

      assertThat(events.failed).hasValue(1);
      assertThat(events.deadLettered).hasValue(1);
      assertThat(events.paused).hasValue(0);
      List<DeadLetter> dead = consumer.deadLetters(10);
      assertThat(dead).singleElement().satisfies(d -> {
        assertThat(d.messageId()).isEqualTo(negative);
        assertThat(d.delivery().count()).isEqualTo(2);
        assertThat(d.error()).contains("charge_constraint_amount_check");
      });
      assertThat(env.queryLong("SELECT count(*) FROM charge_constraint")).isEqualTo(2);
    }
  }

  /** Raises {@code message} with SQLSTATE {@code state} on the server, as a real conflict would arrive. */
  private static void raise(Connection tx, String state, String message) throws Exception {
    try (Statement s = tx.createStatement()) {
      s.execute("DO $$ BEGIN RAISE EXCEPTION '" + message + "' USING ERRCODE = '" + state + "'; END $$");
    }
  }
}
