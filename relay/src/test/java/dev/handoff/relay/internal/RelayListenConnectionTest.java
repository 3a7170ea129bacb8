package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Notifications;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayListener;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartablePostgres;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

/**
 * The relay's LISTEN connection comes from the application's own pool unless it is given one: a LISTEN session
 * that fails, or a relay that stops, must leave that pool exactly as healthy as before. The LISTEN backend is found
 * by the pid the relay reports, never by query text, and each test has a pool of its own that nothing else shares.
 */
@HandoffTest
class RelayListenConnectionTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);
  private static final int POOL_SIZE = 3;

  private final TestEnvironment env;

  RelayListenConnectionTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aKilledListenBackendIsNeverHandedToTheNextBorrowers() throws Exception {
    HikariDataSource pool = env.newDataSource(POOL_SIZE);
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    try (Relay relay = relay(pool, env.schema(), "orders_kill", failures)) {
      relay.start();
      DefaultRelay internals = (DefaultRelay) relay;
      await().atMost(DEADLINE).until(internals::hearing);
      int killed = internals.listeningBackend();
      assertThat(env.queryLong("SELECT CASE WHEN pg_terminate_backend(?) THEN 1 ELSE 0 END", killed))
          .as("the LISTEN backend was killed").isEqualTo(1);
      // The listener has given its connection up once it no longer reports that backend.
      // Polled without pause: the listener reconnects 100 ms later, and may then take its own connection back.
      await().atMost(DEADLINE).pollInterval(Duration.ofMillis(1)).until(() -> internals.listeningBackend() != killed);

      List<Integer> seen = borrowersSucceed(pool, 50, env.schema(), "orders_kill");
      assertThat(seen).as("backends the borrowers got").doesNotContain(killed);
      await().atMost(DEADLINE).until(() -> published(pool, "orders_kill") == 50);
      await().atMost(DEADLINE).until(() -> internals.hearing() && internals.listeningBackend() != killed);
      assertThat(failures).as("relay cycles that failed").isEmpty();
    }
  }

  @Test
  void aServerRestartLeavesNoDeadListenConnectionInThePool() throws Exception {
    String schema = "restart_" + env.keyPrefix();
    try (RestartablePostgres server = RestartablePostgres.start();
        HikariDataSource pool = server.newDataSource(schema, POOL_SIZE)) {
      HandoffMigrations.migrate(pool, schema);
      List<Throwable> failures = new CopyOnWriteArrayList<>();
      try (Relay relay = relay(pool, schema, "orders_restart", failures)) {
        relay.start();
        DefaultRelay internals = (DefaultRelay) relay;
        await().atMost(DEADLINE).until(internals::hearing);
        int before = internals.listeningBackend();

        server.restart();

        // Hearing again proves the relay reconnected through the same pool after every session ended.
        await().atMost(DEADLINE).until(() -> internals.hearing() && internals.listeningBackend() != before);
        int failedWhileDown = failures.size();
        List<Integer> seen = borrowersSucceed(pool, 50, schema, "orders_restart");
        assertThat(seen).doesNotContain(before);
        await().atMost(DEADLINE).until(() -> published(pool, "orders_restart") == 50);
        assertThat(failures.subList(failedWhileDown, failures.size())).as("relay cycles that failed after it heard")
            .isEmpty();
      }
    }
  }

  @Test
  void aStoppedRelayLeavesNoPooledSessionListeningOrHoldingItsWakeLocks() throws Exception {
    HikariDataSource pool = env.newDataSource(POOL_SIZE);
    int listened;
    try (Relay relay = relay(pool, env.schema(), "orders_stop", new CopyOnWriteArrayList<>())) {
      relay.start();
      DefaultRelay internals = (DefaultRelay) relay;
      await().atMost(DEADLINE).until(internals::asleep);
      listened = internals.listeningBackend();
      assertThat(env.queryLong("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ?", listened))
          .as("wake locks the sleeping relay holds").isEqualTo(1);
    }
    // Every connection of the pool at once: the one that listened is among them, and none listens any more.
    List<Connection> all = new ArrayList<>();
    try {
      for (int i = 0; i < pool.getHikariPoolMXBean().getTotalConnections(); i++) {
        all.add(pool.getConnection());
      }
      List<Integer> pids = new ArrayList<>();
      for (Connection c : all) {
        pids.add((int) queryLong(c, "SELECT pg_backend_pid()"));
        assertThat(queryLong(c, "SELECT count(*) FROM pg_listening_channels()")).as("channels listened").isZero();
        assertThat(queryLong(c, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
            + " AND pid = pg_backend_pid()")).as("advisory locks held").isZero();
      }
      assertThat(pids).as("the relay's LISTEN session went back to the pool").contains(listened);
      env.execute("NOTIFY \"" + Notifications.channel(env.schema()) + "\", 'orders'");
      for (Connection c : all) {
        assertThat(queryLong(c, "SELECT 1")).isEqualTo(1); // a round trip, which delivers what was queued
        assertThat(c.unwrap(PGConnection.class).getNotifications(200)).as("notifications received").isEmpty();
      }
    } finally {
      for (Connection c : all) {
        c.close();
      }
    }
  }

  private Relay relay(DataSource pool, String schema, String topic, List<Throwable> failures) {
    return Relay.builder(pool, env.redisSpec())
        .schema(schema)
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .idlePollInterval(Duration.ofMillis(100))
        .listener(new RelayListener() {
          @Override
          public void failed(Throwable error) {
            failures.add(error);
          }
        })
        .build();
  }

  /**
   * {@code n} borrowers, the first taking every idle connection of the pool at once and each other all but one
   * (the relay's listener holds the last) and running a query on each, then appending one message in a transaction as the application would;
   * returns the backends they got. Any dead connection in the pool would fail one of them.
   */
  private List<Integer> borrowersSucceed(HikariDataSource pool, int n, String schema, String topic)
      throws SQLException {
    Outbox outbox = Outbox.builder().schema(schema).build();
    List<Integer> backends = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<Connection> held = new ArrayList<>();
      try {
        // The first takes every idle connection: whatever the listener gave back is among them.
        int take = i == 0 ? Math.max(1, pool.getHikariPoolMXBean().getIdleConnections()) : POOL_SIZE - 1;
        for (int k = 0; k < take; k++) {
          Connection c = pool.getConnection();
          held.add(c);
          backends.add((int) queryLong(c, "SELECT pg_backend_pid()"));
        }
        Connection tx = held.get(0);
        tx.setAutoCommit(false);
        outbox.append(tx, Message.builder(topic, "order.placed").payload("p" + i).build());
        tx.commit();
      } finally {
        for (Connection c : held) {
          c.close();
        }
      }
    }
    return backends;
  }

  private static long published(DataSource pool, String topic) throws SQLException {
    try (Connection c = pool.getConnection()) {
      return queryLong(c, "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND topic = '" + topic + "'");
    }
  }

  private static long queryLong(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
