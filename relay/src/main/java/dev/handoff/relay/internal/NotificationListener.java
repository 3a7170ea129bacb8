package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Notifications;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
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
 *
 * <p>It also holds the relay's sleep ({@link Notifications}): asked to, it takes the wake lock of every shard the
 * relay owns on its session and wakes the relay for one last look; it gives them all back at the first notification
 * for one of the relay's topics, or when asked. Appends notify only while it holds their shard's lock.
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
   * How long a wait for notifications lasts before the listener looks at the relay's requests: how late, at most, a
   * relay falls asleep after asking. No query goes to the server for it.
   */
  static final int REQUEST_POLL_MILLIS = 10;
  /** The shards whose wake lock the relay asks for, taken by the listener's thread; null when nothing is asked. */
  private final AtomicReference<Set<ShardId>> sleepRequest = new AtomicReference<>();
  private volatile boolean wakeRequest;
  /** The shards whose wake lock this listener's session holds: appends to them notify. */
  private volatile Set<ShardId> sleeping = Set.of();
  private final String schema;

  /**
   * @param listenSource where the LISTEN connection comes from (a direct one when the relay was given one)
   * @param notifySource the relay's data source, through which the probe NOTIFY goes as appends' do
   */
  NotificationListener(DataSource listenSource, DataSource notifySource, String schema, Set<String> topics,
      Waiter waiter, String owner, Duration idlePollInterval) {
    this.listenSource = listenSource;
    this.notifySource = notifySource;
    this.schema = schema;
    this.channel = Notifications.channel(schema);
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
        sleeping = Set.of(); // the session's locks went with it
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
      if (wakeOnTopic(pg.getNotifications(REQUEST_POLL_MILLIS)) || wakeRequest) {
        wakeRequest = false;
        wakeUp(c);
      }
      Set<ShardId> asked = sleepRequest.getAndSet(null);
      if (asked != null) {
        fallAsleep(c, asked);
      }
    }
    hearing = false;
    backend = -1;
    sleeping = Set.of();
    unlistenAndClose(c);
    return true;
  }

  /**
   * Takes the wake lock of each shard in {@code shards} (and gives back any other it held), then wakes the relay:
   * its next look for rows comes after the locks, so it sees every row appended without a notification. A lock
   * that an appending transaction holds shared is not taken; the relay then stays awake and asks again later.
   */
  private void fallAsleep(Connection c, Set<ShardId> shards) throws SQLException {
    Integer[] keys = new Integer[shards.size()];
    Integer[] numbers = new Integer[shards.size()];
    ShardId[] ids = shards.toArray(ShardId[]::new);
    for (int i = 0; i < ids.length; i++) {
      keys[i] = Notifications.lockKey(schema, ids[i]);
      numbers[i] = ids[i].shard();
    }
    Set<ShardId> locked = new HashSet<>();
    try (Statement s = Statements.statement(c)) {
      s.execute("SELECT pg_advisory_unlock_all()");
    }
    sleeping = Set.of();
    try (PreparedStatement ps = Statements.prepare(c,
        "SELECT o FROM unnest(?::int[], ?::int[]) WITH ORDINALITY AS k(a, b, o) WHERE pg_try_advisory_lock(a, b)")) {
      ps.setArray(1, c.createArrayOf("int4", keys));
      ps.setArray(2, c.createArrayOf("int4", numbers));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          locked.add(ids[rs.getInt(1) - 1]);
        }
      }
    }
    sleeping = Set.copyOf(locked);
    waiter.wake();
  }

  /** Gives back every wake lock: appends stop notifying. */
  private void wakeUp(Connection c) throws SQLException {
    if (sleeping.isEmpty()) {
      return;
    }
    sleeping = Set.of();
    try (Statement s = Statements.statement(c)) {
      s.execute("SELECT pg_advisory_unlock_all()");
    }
  }

  /**
   * Asks the listener to put the relay to sleep on {@code shards}: it takes their wake locks within
   * {@link #REQUEST_POLL_MILLIS} and then wakes the relay for its last look. Any thread.
   */
  void requestSleep(Set<ShardId> shards) {
    sleepRequest.set(Set.copyOf(shards));
  }

  /** Asks the listener to give back the wake locks it holds (the relay found work without being notified). */
  void requestWake() {
    sleepRequest.set(null);
    if (!sleeping.isEmpty()) {
      wakeRequest = true;
    }
  }

  /** Whether the relay sleeps on exactly {@code shards}: every append to one of them notifies. */
  boolean asleepOn(Set<ShardId> shards) {
    return hearing() && !shards.isEmpty() && sleeping.equals(shards);
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

  /** Wakes the relay when {@code batch} has a notification for one of its topics; returns whether it did. */
  private boolean wakeOnTopic(PGNotification[] batch) {
    if (batch != null) {
      for (PGNotification n : batch) {
        if (topics.contains(n.getParameter())) {
          waiter.wake();
          return true;
        }
      }
    }
    return false;
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
      // A pooled session still holding wake locks would make every append to those shards notify, for good.
      s.execute("SELECT pg_advisory_unlock_all()");
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

  /** Stops within one notification poll; the connection then goes back without its LISTEN and its locks. */
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
