package dev.handoff.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * A LISTEN session of a test's own on one channel, straight to the shared PostgreSQL (never through a pooler), that
 * tells exactly which notifications were delivered: {@link #drain()} returns every one that arrived before a marker
 * notification it sends from another connection. PostgreSQL delivers the notifications of committed transactions in
 * commit order, so whatever committed before the marker has arrived once the marker has, and no time window decides
 * what is seen. Payloads starting with {@code probe:} (a relay checking its own LISTEN session) are left out. Not
 * thread-safe.
 */
public final class NotificationCounter implements AutoCloseable {

  private final TestEnvironment env;
  private final String channel;
  private final Duration deadline;
  private final Connection connection;

  private NotificationCounter(TestEnvironment env, String channel, Duration deadline) throws SQLException {
    this.env = env;
    this.channel = channel;
    this.deadline = deadline;
    Properties props = new Properties();
    if (env.postgres().user() != null) {
      props.setProperty("user", env.postgres().user());
    }
    if (env.postgres().password() != null) {
      props.setProperty("password", env.postgres().password());
    }
    connection = DriverManager.getConnection(env.postgres().jdbcUrl(), props);
    try (Statement s = connection.createStatement()) {
      s.execute("LISTEN \"" + channel + "\"");
    }
  }

  /**
   * Listens on {@code channel} from now on, and forgets what came before. {@code deadline} bounds each
   * {@link #drain()}: a marker that does not arrive by then fails the test.
   */
  public static NotificationCounter listen(TestEnvironment env, String channel, Duration deadline)
      throws SQLException {
    NotificationCounter counter = new NotificationCounter(env, channel, deadline);
    counter.drain();
    return counter;
  }

  /** The payloads delivered since the last drain (or since {@link #listen}), in delivery order. */
  public List<String> drain() throws SQLException {
    String marker = "marker-" + UUID.randomUUID();
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      ps.setString(1, channel);
      ps.setString(2, marker);
      ps.execute();
    }
    PGConnection pg = connection.unwrap(PGConnection.class);
    List<String> payloads = new ArrayList<>();
    long end = System.nanoTime() + deadline.toNanos();
    while (true) {
      long left = (end - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        throw new IllegalStateException("marker " + marker + " not received on " + channel + " within "
            + deadline.toMillis() + " ms; before it: " + payloads);
      }
      PGNotification[] batch = pg.getNotifications((int) Math.min(left, 1_000));
      if (batch != null) {
        for (PGNotification n : batch) {
          if (n.getParameter().equals(marker)) {
            return payloads;
          }
          if (!n.getParameter().startsWith("probe:")) {
            payloads.add(n.getParameter());
          }
        }
      }
    }
  }

  @Override
  public void close() throws SQLException {
    connection.close();
  }
}
