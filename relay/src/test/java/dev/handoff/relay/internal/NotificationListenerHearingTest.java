package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * When the relay may stretch its idle poll: only while its listener hears notifications, which it knows from its
 * own probe NOTIFY, on a real server and through a real PgBouncer in transaction mode, where it cannot.
 */
@HandoffTest
class NotificationListenerHearingTest {

  private static final Duration DEADLINE = Duration.ofSeconds(20);

  private final TestEnvironment env;

  NotificationListenerHearingTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aDirectConnectionHearsAgainAfterItsBackendIsKilledAndStopsHearingWhenStopped() throws Exception {
    // A pool of the listener's own: the test's queries never share a connection with the session it kills.
    HikariDataSource pool = env.newDataSource(4);
    NotificationListener listener = listener(pool, pool);
    Thread thread = start(listener);
    await().atMost(DEADLINE).until(listener::hearing);
    int first = listener.backend();
    assertThat(env.queryLong("SELECT CASE WHEN pg_terminate_backend(?) THEN 1 ELSE 0 END", first))
        .as("the LISTEN backend was killed").isEqualTo(1);
    // Losing the connection clears hearing before it reconnects; true again only once the new probe came back.
    await().atMost(DEADLINE).until(() -> listener.backend() != first && listener.hearing());
    listener.stop();
    assertThat(listener.hearing()).isFalse();
    thread.join(DEADLINE.toMillis());
    assertThat(thread.isAlive()).isFalse();
  }

  @Test
  void behindTransactionPoolingItNeverHears() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource pool = pgbouncer.newDataSource(4)) {
      NotificationListener listener = listener(pool, pool);
      Thread thread = start(listener);
      thread.join(DEADLINE.toMillis());
      assertThat(thread.isAlive()).as("it gave up listening: the relay polls").isFalse();
      assertThat(listener.hearing()).isFalse();
    }
  }

  private NotificationListener listener(javax.sql.DataSource listen, javax.sql.DataSource notify) {
    return new NotificationListener(listen, notify, "hearing_test", Set.of("payments"), new Waiter(), "relay-t",
        Duration.ofSeconds(1));
  }

  private static Thread start(NotificationListener listener) {
    Thread thread = new Thread(listener, "hearing-test-listener");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }
}
