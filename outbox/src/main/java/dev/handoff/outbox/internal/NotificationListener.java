package dev.handoff.outbox.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listens for appends' notifications on a connection of its own and wakes the relay. When the connection fails it
 * reconnects with a growing pause; the relay's polling covers the gap, so a lost notification delays a row by at
 * most the idle poll interval and never loses it.
 */
final class NotificationListener implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(NotificationListener.class);

  private final DataSource dataSource;
  private final String channel;
  private final Set<String> topics;
  private final Waiter waiter;
  private volatile boolean running = true;

  NotificationListener(DataSource dataSource, String channel, Set<String> topics, Waiter waiter) {
    this.dataSource = dataSource;
    this.channel = channel;
    this.topics = topics;
    this.waiter = waiter;
  }

  @Override
  public void run() {
    long backoffMillis = 100;
    while (running) {
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("LISTEN \"" + channel + "\"");
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        backoffMillis = 100;
        // Rows committed while no one listened are only seen by polling; look once now.
        waiter.wake();
        while (running) {
          PGNotification[] batch = pg.getNotifications(500);
          if (batch != null) {
            for (PGNotification n : batch) {
              if (topics.contains(n.getParameter())) {
                waiter.wake();
                break;
              }
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
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

  /** Stops within one notification poll (half a second). */
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
