package dev.handoff.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@HandoffTest
class OutboxCapacityTest {

  private final TestEnvironment env;

  OutboxCapacityTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void emptyOutbox() {
    env.execute("TRUNCATE " + env.schema() + ".outbox");
  }

  @Test
  void rejectPolicyThrowsAtTheLimitAndWritesNothing() throws SQLException {
    Outbox outbox = Outbox.builder()
        .schema(env.schema())
        .topic(TopicConfig.of("payments").withCapacity(CapacityPolicy.reject(5)))
        .build();
    try (Connection tx = transaction()) {
      for (int i = 0; i < 4; i++) {
        outbox.append(tx, Message.builder("payments", "payment.created").build());
      }
      tx.commit();
    }
    try (Connection tx = transaction()) {
      assertThatThrownBy(() -> outbox.appendAll(tx, List.of(
              Message.builder("payments", "a").build(), Message.builder("payments", "b").build())))
          .isInstanceOfSatisfying(OutboxFullException.class, e -> {
            assertThat(e.topic()).isEqualTo("payments");
            assertThat(e.depth()).isEqualTo(4);
            assertThat(e.capacity()).isEqualTo(5);
          })
          .hasMessageContaining("'payments' is full");
      outbox.append(tx, Message.builder("payments", "payment.created").build());
      assertThatThrownBy(() -> outbox.append(tx, Message.builder("payments", "payment.created").build()))
          .isInstanceOf(OutboxFullException.class);
      // Other topics are not bounded by this one.
      outbox.append(tx, Message.builder("refunds", "refund.created").build());
      tx.commit();
    }
    assertThat(env.queryLong("select count(*) from outbox where topic = 'payments'")).isEqualTo(5);
    assertThat(env.queryLong("select count(*) from outbox where topic = 'refunds'")).isEqualTo(1);
  }

  @Test
  void rejectPolicyCountsRowsOtherProcessesAppended() throws SQLException {
    Outbox outbox = Outbox.builder()
        .schema(env.schema())
        .depthRefreshInterval(Duration.ofMillis(1))
        .topic(TopicConfig.of("payments").withCapacity(CapacityPolicy.reject(3)))
        .build();
    Outbox other = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = transaction()) {
      outbox.append(tx, Message.builder("payments", "payment.created").build());
      tx.commit();
    }
    try (Connection tx = transaction()) {
      other.appendAll(tx, List.of(Message.builder("payments", "a").build(), Message.builder("payments", "b").build()));
      tx.commit();
    }
    sleepPast(Duration.ofMillis(5));
    try (Connection tx = transaction()) {
      assertThatThrownBy(() -> outbox.append(tx, Message.builder("payments", "c").build()))
          .isInstanceOfSatisfying(OutboxFullException.class, e -> assertThat(e.depth()).isEqualTo(3));
    }
  }

  @Test
  void waitPolicyBlocksAndResumesWhenTheDepthFalls() throws Exception {
    Outbox outbox = Outbox.builder()
        .schema(env.schema())
        .capacityPollInterval(Duration.ofMillis(20))
        .topic(TopicConfig.of("payments").withCapacity(CapacityPolicy.waitUpTo(3, Duration.ofSeconds(20))))
        .build();
    try (Connection tx = transaction()) {
      outbox.appendAll(tx, List.of(Message.builder("payments", "a").build(),
          Message.builder("payments", "b").build(), Message.builder("payments", "c").build()));
      tx.commit();
    }

    CountDownLatch started = new CountDownLatch(1);
    CompletableFuture<AppendedMessage> blocked = CompletableFuture.supplyAsync(() -> {
      try (Connection tx = transaction()) {
        started.countDown();
        AppendedMessage m = outbox.append(tx, Message.builder("payments", "d").build());
        tx.commit();
        return m;
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(started.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(waitsAtLeast(blocked, Duration.ofMillis(300))).as("append must wait while the topic is full").isTrue();
    assertThat(env.queryLong("select count(*) from outbox")).isEqualTo(3);

    // What the relay does: publishing a row lowers the depth.
    env.execute("update outbox set stream_ms = 1, stream_seq = id, published_at = now() "
        + "where id = (select min(id) from outbox)");

    AppendedMessage appended = blocked.get(10, TimeUnit.SECONDS);
    assertThat(env.queryLong("select count(*) from outbox where message_id = ?", appended.messageId())).isEqualTo(1);
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isEqualTo(3);
  }

  @Test
  void waitPolicyThrowsAtTheDeadlineAndWritesNothing() throws SQLException {
    Outbox outbox = Outbox.builder()
        .schema(env.schema())
        .topic(TopicConfig.of("payments").withCapacity(CapacityPolicy.waitUpTo(2, Duration.ofMillis(300))))
        .build();
    try (Connection tx = transaction()) {
      outbox.appendAll(tx, List.of(Message.builder("payments", "a").build(), Message.builder("payments", "b").build()));
      tx.commit();
    }
    try (Connection tx = transaction()) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> outbox.append(tx, Message.builder("payments", "c").build()))
          .isInstanceOfSatisfying(OutboxFullException.class, e -> assertThat(e.depth()).isEqualTo(2))
          .hasMessageContaining("waited 300 ms");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
      tx.commit();
    }
    assertThat(env.queryLong("select count(*) from outbox")).isEqualTo(2);
  }

  private static boolean waitsAtLeast(CompletableFuture<?> future, Duration duration) {
    try {
      future.get(duration.toMillis(), TimeUnit.MILLISECONDS);
      return false;
    } catch (java.util.concurrent.TimeoutException e) {
      return true;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static void sleepPast(Duration d) {
    long until = System.nanoTime() + d.toNanos();
    while (System.nanoTime() < until) {
      Thread.onSpinWait();
    }
  }

  private Connection transaction() throws SQLException {
    Connection c = env.dataSource().getConnection();
    c.setAutoCommit(false);
    return c;
  }
}
