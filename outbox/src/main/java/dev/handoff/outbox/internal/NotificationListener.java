package dev.handoff.outbox.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listens for appends' notifications on a connection of its own and wakes the relay. When the connection fails it
 * reconnects with a growing pause; the relay's polling covers the gap, so a lost notification delays a row by at
 * most the idle poll interval and never loses it.
 *
 * <p>LISTEN belongs to a server session. Behind a pooler in transaction mode (PgBouncer's {@code pool_mode =
 * transaction}) the session goes back to the pool once LISTEN is done, and notifications reach whichever client
 * holds it then: the relay would wait for its idle poll without a word. So the listener checks first, without
 * LISTEN, that its connection keeps its server session: its backend must stay the same while another connection of
 * the relay's data source holds a transaction open, and must not be that connection's (PgBouncer hands an idle
 * server to the next client, so in transaction pooling the two share it). Then, after LISTEN, it sends a probe
 * NOTIFY through the relay's data source (the way appends notify) and waits for it. When either check fails, the
 * listener says so once at WARN and ends: the relay polls.
 */
final class NotificationListener implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(NotificationListener.class);
  /** How long the probe may take; on a direct connection it arrives within milliseconds. */
  static final Duration PROBE_TIMEOUT = Duration.ofSeconds(5);

  private final DataSource listenSource;
  private final DataSource notifySource;
  private final String channel;
  private final Set<String> topics;
  private final Waiter waiter;
  private final String owner;
  private final Duration idlePollInterval;
  private volatile boolean running = true;
  /** Set once the probe NOTIFY arrived on the current LISTEN connection; cleared when that connection is lost. */
  private volatile boolean hearing;
  /** The server process of the current LISTEN session, or -1: what an operator (or a test) terminates or traces. */
  private volatile int backend = -1;

  /**
   * @param listenSource where the LISTEN connection comes from (a direct one when the relay was given one)
   * @param notifySource the relay's data source, through which the probe NOTIFY goes as appends' do
   */
  NotificationListener(DataSource listenSource, DataSource notifySource, String channel, Set<String> topics,
      Waiter waiter, String owner, Duration idlePollInterval) {
    this.listenSource = listenSource;
    this.notifySource = notifySource;
    this.channel = channel;
    this.topics = topics;
    this.waiter = waiter;
    this.owner = owner;
    this.idlePollInterval = idlePollInterval;
  }

  @Override
  public void run() {
    long backoffMillis = 100;
    while (running) {
      Connection c = null;
      try {
        c = listenSource.getConnection();
        if (!listenOn(c)) {
          backend = -1;
          return;
        }
        backoffMillis = 100;
        c = null; // listenOn gave it back, without its LISTEN
      } catch (SQLException | RuntimeException e) {
        hearing = false;
        if (c != null) {
          // Its session failed outside the pool's sight (on the driver's connection): it must not be borrowed again.
          PooledConnections.discard(listenSource, c);
        }
        backend = -1;
        if (!running) {
          break;
        }
        log.warn("relay lost its LISTEN connection ({}); polling until it reconnects in {} ms", e.toString(),
            backoffMillis);
        sleep(backoffMillis);
        backoffMillis = Math.min(5_000, backoffMillis * 2);
      }
    }
  }

  /**
   * Listens on {@code c} until the listener stops, then takes the LISTEN back and closes {@code c}; false when
   * notifications cannot reach the relay through it (the relay polls). Throws, leaving {@code c} open, when its
   * session fails.
   */
  private boolean listenOn(Connection c) throws SQLException {
    c.setAutoCommit(true);
    backend = backend(c);
    String sessionLost = sessionKept(c);
    if (sessionLost != null) {
      waiter.wake();
      warnPolling(sessionLost);
      c.close();
      return false;
    }
    try (Statement s = Statements.statement(c)) {
      s.execute("LISTEN \"" + channel + "\"");
    }
    PGConnection pg = c.unwrap(PGConnection.class);
    // Rows committed while no one listened are only seen by polling; look once now.
    waiter.wake();
    if (!probe(pg)) {
      warnPolling("a NOTIFY sent through the relay's data source did not arrive within "
          + PROBE_TIMEOUT.toSeconds() + " s");
      unlistenAndClose(c);
      return false;
    }
    hearing = true;
    while (running) {
      wakeOnTopic(pg.getNotifications(500));
    }
    hearing = false;
    backend = -1;
    unlistenAndClose(c);
    return true;
  }

  /**
   * Null when {@code c} keeps its server session, or what shows it does not. A session of its own is never shared
   * with another connection's open transaction and never changes between statements.
   */
  private String sessionKept(Connection c) throws SQLException {
    int before = backend;
    try (Connection other = notifySource.getConnection()) {
      other.setAutoCommit(false);
      try {
        int others = backend(other);
        int after = backend(c);
        if (others == before) {
          return "its connection's server session (backend " + before + ") was handed to another connection of"
              + " the relay's data source";
        }
        if (after != before) {
          return "its connection moved from server session " + before + " to " + after + " between statements";
        }
        return null;
      } finally {
        other.rollback();
        other.setAutoCommit(true);
      }
    }
  }

  private static int backend(Connection c) throws SQLException {
    try (Statement s = Statements.statement(c); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Whether a NOTIFY sent through the relay's data source reaches this LISTEN; any notification proves it. */
  private boolean probe(PGConnection pg) throws SQLException {
    String payload = "probe:" + UUID.randomUUID(); // not a topic name, so other relays ignore it
    try (Connection n = notifySource.getConnection();
        PreparedStatement ps = Statements.prepare(n, "SELECT pg_notify(?, ?)")) {
      n.setAutoCommit(true);
      ps.setString(1, channel);
      ps.setString(2, payload);
      ps.execute();
    }
    long deadline = System.nanoTime() + PROBE_TIMEOUT.toNanos();
    while (running) {
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        return false;
      }
      PGNotification[] batch = pg.getNotifications((int) Math.min(left, 500));
      if (batch != null && batch.length > 0) {
        wakeOnTopic(batch);
        return true;
      }
    }
    return true; // stopping: nothing to report
  }

  /**
   * Whether notifications reach the relay now: LISTEN is in place on a connection that keeps its session, and its
   * probe NOTIFY arrived. While so, every append through handoff wakes the relay, and polling is only a safety net.
   */
  boolean hearing() {
    return hearing && running;
  }

  /** The backend pid ({@code pg_backend_pid()}) of the session that listens now, or -1 when none does. */
  int backend() {
    return backend;
  }

  private void wakeOnTopic(PGNotification[] batch) {
    if (batch != null) {
      for (PGNotification n : batch) {
        if (topics.contains(n.getParameter())) {
          waiter.wake();
          return;
        }
      }
    }
  }

  private void warnPolling(String evidence) {
    log.warn("relay {}: notifications cannot reach it ({}; a pooler in transaction mode, such as PgBouncer's"
            + " pool_mode = transaction, gives each transaction any server session), so it polls the outbox every"
            + " {} ms (idlePollInterval) and a new row waits up to that long. To fix: give the relay a direct"
            + " connection to PostgreSQL for LISTEN (RelayBuilder.notificationDataSource, or --notification-jdbc-url"
            + " / HANDOFF_NOTIFICATION_JDBC_URL), or use session pooling", owner, evidence,
        idlePollInterval.toMillis());
  }

  /**
   * Takes the LISTEN back before {@code c} goes back to its pool, which may be the application's: a session still
   * listening would collect every append's notification for whoever borrows it next. Behind transaction pooling
   * this reaches some server session, most likely the one that took the LISTEN (PgBouncer reuses the last idle
   * one). A connection whose UNLISTEN fails is discarded instead.
   */
  private void unlistenAndClose(Connection c) {
    try (Statement s = Statements.statement(c)) {
      s.execute("UNLISTEN *");
    } catch (SQLException e) {
      log.debug("UNLISTEN failed; discarding the connection", e);
      PooledConnections.discard(listenSource, c);
      return;
    }
    try {
      c.close();
    } catch (SQLException e) {
      log.debug("closing the LISTEN connection failed", e);
    }
  }

  /** Stops within one notification poll (half a second); the connection then goes back without its LISTEN. */
  void stop() {
    running = false;
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
