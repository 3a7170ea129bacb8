package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A handler cannot end the transaction handoff gave it: whichever way it tries, and whether it lets the error out or
 * swallows it, nothing of that message commits, its marker never says processed, and the failure ends in a dead
 * letter instead of vanishing. The other messages of the batch are handled once each.
 */
@HandoffTest
class HandlerTransactionTest {

  /** One way for a handler to end its transaction; each runs after the handler wrote its effect. */
  enum Ending {
    COMMIT_CALLED(tx -> tx.commit()),
    ROLLBACK_CALLED(tx -> tx.rollback()),
    AUTO_COMMIT_TURNED_ON(tx -> tx.setAutoCommit(true)),
    CLOSE_CALLED(tx -> tx.close()),
    COMMIT_RUN_AS_SQL(tx -> run(tx, "COMMIT")),
    ROLLBACK_RUN_AS_SQL(tx -> run(tx, "ROLLBACK")),
    /** Through the pool's connection that a statement reports as its own, as frameworks reach it. */
    COMMIT_ON_THE_CONNECTION_UNDER_IT(tx -> {
      try (Statement s = tx.createStatement()) {
        s.getConnection().commit();
      }
    });

    final SqlAction action;

    Ending(SqlAction action) {
      this.action = action;
    }

    private static void run(Connection tx, String sql) throws SQLException {
      try (Statement s = tx.createStatement()) {
        s.execute(sql);
      }
    }
  }

  @FunctionalInterface
  interface SqlAction {
    void apply(Connection tx) throws SQLException;
  }

  private final TestEnvironment env;

  HandlerTransactionTest(TestEnvironment env) {
    this.env = env;
  }

  static Stream<Arguments> endings() {
    List<Arguments> out = new ArrayList<>();
    for (Ending e : Ending.values()) {
      for (boolean swallowed : new boolean[] {false, true}) {
        out.add(Arguments.of(e, swallowed, FailureIsolation.OPTIMISTIC_BATCH));
      }
    }
    out.add(Arguments.of(Ending.COMMIT_CALLED, true, FailureIsolation.SAVEPOINT_PER_MESSAGE));
    out.add(Arguments.of(Ending.COMMIT_RUN_AS_SQL, true, FailureIsolation.SAVEPOINT_PER_MESSAGE));
    out.add(Arguments.of(Ending.COMMIT_RUN_AS_SQL, false, FailureIsolation.SAVEPOINT_PER_MESSAGE));
    return out.stream();
  }

  @ParameterizedTest(name = "{0}, swallowed {1}, {2}")
  @MethodSource("endings")
  void aHandlerThatEndsItsTransactionCommitsNothingAndItsMessageIsDeadLettered(Ending ending, boolean swallowed,
      FailureIsolation isolation) {
    String name = ("end-" + ending.name() + "-" + swallowed + "-" + isolation.name()).toLowerCase().replace('_', '-');
    Fixture f = new Fixture(env, name);
    String g = f.topic;
    StreamMessage before = f.message();
    StreamMessage rogue = f.message();
    StreamMessage after = f.message();
    f.publish(before);
    f.publish(rogue);
    f.publish(after);
    MessageHandler effect = f.effect(g, null);
    try (StreamConsumer consumer = f.consumer(g).failureIsolation(isolation).maxDeliveries(1)
        .handler((tx, m) -> {
          effect.handle(tx, m);
          if (m.messageId().equals(rogue.messageId())) {
            try {
              ending.action.apply(tx);
            } catch (SQLException e) {
              if (!swallowed) {
                throw e;
              }
            }
            effect.handle(tx, m); // a write after the end: in no transaction handoff commits either
          }
        })
        .build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.handled()).as(r.toString()).isEqualTo(2);
      assertThat(r.deadLettered()).isEqualTo(1);
      assertThat(f.effectCount(g, before.messageId())).isEqualTo(1);
      assertThat(f.effectCount(g, after.messageId())).isEqualTo(1);
      assertThat(f.effectCount(g, rogue.messageId())).as("nothing of the rogue message committed").isZero();
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ? AND message_id = ?"
          + " AND outcome = 'processed'", g, rogue.messageId())).isZero();
      assertThat(f.inboxCount(g, "processed")).isEqualTo(2);
      assertThat(f.pendingTotal(g)).isZero();
      List<DeadLetter> dead = consumer.deadLetters(10);
      assertThat(dead).singleElement().satisfies(d -> {
        assertThat(d.messageId()).isEqualTo(rogue.messageId());
        assertThat(d.error()).containsAnyOf("must not call", "ended the transaction it was given",
            "a handler ended its consumer batch's transaction");
      });
    }
  }

  @Test
  void theSealEndsWithItsTransactionAndLeavesNothingOnThePooledConnection() throws SQLException {
    Fixture f = new Fixture(env, "seal-scope");
    String g = f.topic;
    f.publish(f.message());
    f.publish(f.message());
    try (HikariDataSource one = env.newDataSource(1);
        StreamConsumer consumer = f.consumerWithoutHandler(g, one).handler(f.effect(g, null)).build()) {
      assertThat(consumer.pollOnce().handled()).isEqualTo(2);

      try (Connection c = one.getConnection(); Statement s = c.createStatement()) {
        try (ResultSet rs = s.executeQuery("SELECT coalesce(current_setting('handoff.batch_seal', true), '')")) {
          rs.next();
          assertThat(rs.getString(1)).as("the seal is local to the batch's transaction").isEmpty();
        }
        // A marker written on that connection outside any batch (as the inbox purge and dead-lettering do) commits.
        s.executeUpdate("INSERT INTO " + env.schema() + ".inbox (consumer_group, message_id, stream_id, outcome)"
            + " VALUES ('" + g + "', gen_random_uuid(), '0-1', 'dead')");
      }
      assertThat(f.inboxCount(g, "processed")).isEqualTo(2);
      assertThat(f.inboxCount(g, "dead")).isEqualTo(1);
    }
  }

  @Test
  void theRefusalNamesTheRuleTheGroupAndTheMessage() {
    Fixture f = new Fixture(env, "end-refusal-text");
    StreamMessage m = f.message();
    f.publish(m);
    List<String> seen = new ArrayList<>();
    try (StreamConsumer consumer = f.consumer(f.topic).maxDeliveries(1).handler((tx, msg) -> {
      try {
        tx.commit();
      } catch (SQLException e) {
        seen.add(e.getSQLState() + " " + e.getMessage());
        throw e;
      }
    }).build()) {
      consumer.pollOnce();
    }
    assertThat(seen).containsExactly("2D000 handoff: a handler must not call commit() on the transaction it was"
        + " given (consumer group '" + f.topic + "', message " + m.messageId() + "): handoff commits the inbox marker"
        + " and the handler's writes together once the handler returns");
  }

  @Test
  void aJooqHandlerOpeningItsOwnJooqTransactionIsRefusedAndCommitsNothing() {
    Fixture f = new Fixture(env, "end-jooq");
    String g = f.topic;
    StreamMessage m = f.message();
    f.publish(m);
    try (StreamConsumer consumer = f.consumerWithoutHandler(g).maxDeliveries(1).jooqHandler((tx, msg) ->
        tx.transaction(cfg -> DSL.using(cfg).execute("INSERT INTO " + f.effects
            + " (consumer_group, message_id) VALUES (?, ?)", g, msg.messageId()))).build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.deadLettered()).as(r.toString()).isEqualTo(1);
      assertThat(f.effectCount(g)).isZero();
      assertThat(f.inboxCount(g, "processed")).isZero();
      assertThat(consumer.deadLetters(10).get(0).error()).contains("must not call commit()");
    }
  }

  @Test
  void aBatchHandlerThatCommitsAsSqlIsBisectedDownToItsMessage() {
    Fixture f = new Fixture(env, "end-batch-handler");
    String g = f.topic;
    List<StreamMessage> messages = List.of(f.message(), f.message(), f.message(), f.message());
    messages.forEach(f::publish);
    StreamMessage rogue = messages.get(2);
    MessageHandler effect = f.effect(g, null);
    try (StreamConsumer consumer = f.consumerWithoutHandler(g).maxDeliveries(1).batchHandler((tx, batch) -> {
      for (InboundMessage m : batch) {
        effect.handle(tx, m);
        if (m.messageId().equals(rogue.messageId())) {
          commitAsSqlAndCarryOn(tx);
        }
      }
    }).build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.handled()).as(r.toString()).isEqualTo(3);
      assertThat(r.deadLettered()).isEqualTo(1);
      for (StreamMessage m : messages) {
        assertThat(f.effectCount(g, m.messageId())).isEqualTo(m == rogue ? 0 : 1);
      }
      assertThat(consumer.deadLetters(10)).extracting(DeadLetter::messageId).containsExactly(rogue.messageId());
      assertThat(f.pendingTotal(g)).isZero();
    }
  }

  @Test
  void aDeadLetterRetriedThroughAHandlerThatStillCommitsStaysDeadAndOnceFixedHasExactlyOneEffect() {
    Fixture f = new Fixture(env, "end-retry");
    String g = f.topic;
    StreamMessage m = f.message();
    f.publish(m);
    AtomicBoolean fixed = new AtomicBoolean();
    MessageHandler effect = f.effect(g, null);
    try (StreamConsumer consumer = f.consumer(g).maxDeliveries(1).handler((tx, msg) -> {
      effect.handle(tx, msg);
      if (!fixed.get()) {
        commitAsSqlAndCarryOn(tx);
      }
    }).build()) {
      consumer.pollOnce();
      long id = consumer.deadLetters(10).get(0).id();

      assertThatThrownBy(() -> consumer.retry(id)).isInstanceOf(ConsumerException.class)
          .hasMessageContaining("stays dead");
      assertThat(f.effectCount(g, m.messageId())).isZero();
      DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build()
          .requestRetry(g, DeadLetterSelection.id(id));
      assertThat(consumer.maintainOnce()).isEqualTo(1);
      assertThat(f.effectCount(g, m.messageId())).isZero();
      assertThat(consumer.deadLetters(10).get(0).retry().error()).contains("ended the transaction it was given");

      fixed.set(true);
      assertThat(consumer.retry(id)).isTrue();
      assertThat(f.effectCount(g, m.messageId())).isEqualTo(1);
      assertThat(f.inboxCount(g, "processed")).isEqualTo(1);
    }
  }

  /** {@code COMMIT} sent as SQL, its failure swallowed, as careless code does. */
  private static void commitAsSqlAndCarryOn(Connection tx) {
    try (Statement s = tx.createStatement()) {
      s.execute("COMMIT");
    } catch (SQLException swallowed) {
      // the handler carries on as if it had worked
    }
  }
}
