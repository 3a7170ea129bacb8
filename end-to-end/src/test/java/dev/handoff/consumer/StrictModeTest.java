package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The test kit's strict mode catches the handler written the usual way, through the application's own data source,
 * whose writes commit apart from the inbox marker: the waits and replay assertions fail for it, naming the message,
 * even when the handler swallowed the refusal.
 */
@HandoffTest
class StrictModeTest {

  private final TestEnvironment env;

  StrictModeTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aHandlerWritingThroughTheApplicationsDataSourceFailsTheReplayAssertionAndWritesNothing() {
    Fixture f = new Fixture(env, "strict-outside");
    DataSource dataSource = env.dataSource();
    DataSource appData = ConsumerTestKit.strict(dataSource);
    StreamMessage m = f.message();
    f.publish(m);
    try (StreamConsumer consumer = f.consumer(f.topic).handler((tx, msg) -> insertEffect(appData, f, msg))
        .build()) {
      PollResult r = consumer.pollOnce();

      assertThat(r.failed()).isEqualTo(1);
      assertThat(f.effectCount(f.topic)).as("the refused borrow wrote nothing").isZero();
      assertThatThrownBy(() -> ConsumerTestKit.assertReplayChangesNothing(consumer))
          .isInstanceOf(AssertionError.class)
          .hasMessage("consumer group '" + f.topic + "': in strict mode, the handler of message " + m.messageId()
              + " asked the application's DataSource for a connection; what it writes there commits on its own,"
              + " apart from the inbox marker, and again on every redelivery: write through the Connection the"
              + " handler was given, or, under the Spring Boot starter, through Spring (JdbcTemplate, JPA) with the"
              + " default propagation");
    }
  }

  @Test
  void aRefusalTheHandlerSwallowedStillFailsTheWait() {
    Fixture f = new Fixture(env, "strict-swallowed");
    DataSource appData = ConsumerTestKit.strict(env.dataSource());
    MessageHandler effect = f.effect(f.topic, null);
    StreamMessage m = f.message();
    f.publish(m);
    try (StreamConsumer consumer = f.consumer(f.topic).handler((tx, msg) -> {
      try {
        insertEffect(appData, f, msg);
      } catch (SQLException fallBackQuietly) {
        effect.handle(tx, msg);
      }
    }).build()) {
      consumer.pollOnce();

      assertThat(f.effectCount(f.topic, m.messageId())).isEqualTo(1);
      assertThatThrownBy(() -> ConsumerTestKit.awaitProcessed(consumer, List.of(m.messageId()),
          Duration.ofSeconds(10))).isInstanceOf(AssertionError.class).hasMessageContaining("in strict mode");
    }
  }

  @Test
  void aHandlerWritingThroughItsOwnConnectionPassesAndTheDataSourceStillServesEveryoneElse() throws Exception {
    Fixture f = new Fixture(env, "strict-inside");
    DataSource appData = ConsumerTestKit.strict(env.dataSource());
    List<StreamMessage> messages = List.of(f.message(), f.message());
    messages.forEach(f::publish);
    try (StreamConsumer consumer = f.consumer(f.topic).build()) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(30));
      ConsumerTestKit.awaitProcessed(consumer, messages.stream().map(StreamMessage::messageId).toList(),
          Duration.ofSeconds(10));
      ConsumerTestKit.assertReplayChangesNothing(consumer);

      try (Connection c = appData.getConnection()) {
        assertThat(c.isValid(5)).as("outside a handler, it lends as before").isTrue();
      }
      assertThat(f.effectCount(f.topic)).isEqualTo(2);
    }
  }

  private static void insertEffect(DataSource dataSource, Fixture f, InboundMessage m) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "INSERT INTO " + f.env.schema() + "." + f.effects + " (consumer_group, message_id) VALUES (?, ?)")) {
      ps.setString(1, f.topic);
      ps.setObject(2, m.messageId());
      ps.executeUpdate();
    }
  }
}
