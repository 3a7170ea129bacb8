package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renews a started relay's leases on a thread of its own, every third of the lease TTL, in one statement for all of
 * them (with the membership heartbeat), so that a long cycle or a drain on the relay's thread cannot outlive a lease.
 * It renews only for a working relay: while the relay's thread is alive and has
 * {@linkplain #checkIn() checked in} within two TTLs. A relay whose thread died, or is stuck in a call that never
 * returns, lets its leases expire, and another relay takes its shards over as it would from a dead process. A lease
 * it finds held by another relay is reported to the relay's thread ({@link #takeLost()}), which stops writing that
 * shard; every write stays fenced by the epoch whatever this thread saw.
 *
 * <p>Thread-safe: the owned epochs and the check-in are volatile, the losses a concurrent queue.
 */
final class LeaseRenewer {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  /** A lease the renewal found held by another relay: the shard and the epoch this relay had. */
  record Lost(ShardId shard, long epoch) {}

  private final RelayConfig config;
  private final DataSource dataSource;
  private final LeaseQueries leases;
  private final ConcurrentLinkedQueue<Lost> lost = new ConcurrentLinkedQueue<>();
  private final long stuckAfterNanos;
  private volatile Map<ShardId, Long> owned = Map.of();
  private volatile long lastCheckInNanos = System.nanoTime();
  private volatile boolean stuckReported;
  private ScheduledExecutorService executor;
  private Thread relayThread;

  LeaseRenewer(RelayConfig config, DataSource dataSource, LeaseQueries leases) {
    this.config = config;
    this.dataSource = dataSource;
    this.leases = leases;
    this.stuckAfterNanos = config.leases().ttl().toNanos() * 2;
  }

  /** Starts renewing for {@code relayThread}, whose death or silence stops the renewals. */
  synchronized void start(Thread relayThread, Thread.UncaughtExceptionHandler uncaught) {
    this.relayThread = relayThread;
    checkIn();
    executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "handoff-relay-lease-" + config.owner());
      t.setDaemon(true);
      t.setUncaughtExceptionHandler(uncaught);
      return t;
    });
    long every = Math.max(1, config.leases().ttl().toMillis() / 3);
    executor.scheduleWithFixedDelay(this::renewQuietly, every, every, TimeUnit.MILLISECONDS);
  }

  /** Whether a renewal thread runs: if not, the relay's own lease checks renew ({@code relayOnce}). */
  synchronized boolean running() {
    return executor != null && !executor.isShutdown();
  }

  /** Stops the renewals; called last on close, once the relay's thread stopped and gave its leases back. */
  synchronized void stop() {
    if (executor != null) {
      executor.shutdownNow();
    }
  }

  /** The relay's thread is working: called once per cycle and between the shards of a drain. */
  void checkIn() {
    lastCheckInNanos = System.nanoTime();
  }

  /** How long the relay's thread has not checked in. */
  long silentNanos() {
    return System.nanoTime() - lastCheckInNanos;
  }

  /** The shards the relay owns now, with their epochs; called whenever ownership changes. */
  void owned(Map<ShardId, Long> epochs) {
    this.owned = Map.copyOf(epochs);
  }

  /** The leases found held by another relay since the last call. */
  List<Lost> takeLost() {
    List<Lost> out = new ArrayList<>();
    for (Lost l; (l = lost.poll()) != null; ) {
      out.add(l);
    }
    return out;
  }

  /** Renews every lease held, and reports the owned ones whose renewal found another owner. */
  void renewNow(Connection c) throws SQLException {
    Map<ShardId, Long> expected = owned;
    Map<ShardId, Long> renewed = leases.renewAll(c, config.owner(), config.leases().ttl(), expected);
    expected.forEach((shard, epoch) -> {
      if (!epoch.equals(renewed.get(shard))) {
        lost.add(new Lost(shard, epoch));
      }
    });
  }

  private void renewQuietly() {
    Thread t = relayThread;
    if (t == null || !t.isAlive()) {
      return; // a dead relay renews nothing, as a dead process would not
    }
    long silent = System.nanoTime() - lastCheckInNanos;
    if (silent > stuckAfterNanos) {
      if (!stuckReported) {
        stuckReported = true;
        log.error("relay {}: its thread has not completed a cycle for {} ms (stuck in a database or Redis call?);"
            + " its leases are no longer renewed, so that another relay takes its shards", config.owner(),
            TimeUnit.NANOSECONDS.toMillis(silent));
      }
      return;
    }
    stuckReported = false;
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      renewNow(c);
    } catch (SQLException | RuntimeException e) {
      log.warn("relay {}: lease renewal failed ({}); it runs again in {} ms", config.owner(), e.toString(),
          config.leases().ttl().toMillis() / 3);
    } catch (Throwable e) {
      // The executor cancels a periodic task for good once it throws: one Error escaping here would end every
      // later renewal while the relay's thread, and its health, carried on as if its leases were safe.
      log.error("relay {}: lease renewal failed; it runs again in {} ms", config.owner(),
          config.leases().ttl().toMillis() / 3, e);
    }
  }
}
