package dev.handoff.relay.internal;

import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayFaults;
import dev.handoff.relay.RelayListener;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.exceptions.JedisException;

/**
 * How the relay lives with failures: a failed cycle (logged, reported, then a pause that doubles from 100 ms up to
 * five idle poll intervals), a listener that throws (logged and ignored, whatever it throws), and a
 * thread that dies (of a {@link VirtualMachineError}, the one kind of {@link Throwable} its loop does not survive).
 * The backoff is confined to the relay's loop thread; the rest is stateless and safe from any thread.
 */
final class RelayFailures {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);
  private static final long FIRST_BACKOFF_MILLIS = 100;

  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayHealth health;
  private final RelayFaults faults;
  private long backoffMillis = FIRST_BACKOFF_MILLIS;
  /** Whether the current run of failed cycles has said that Redis is full: one WARN per episode, not per retry. */
  private boolean saidFull;

  RelayFailures(RelayConfig config, RelayCollaborators collaborators, RelayHealth health) {
    this.config = config;
    this.listener = collaborators.listener();
    this.health = health;
    this.faults = collaborators.faults();
  }

  /** A cycle succeeded: the next failure pauses briefly again. */
  void cycleSucceeded() {
    if (saidFull) {
      log.info("relay {}: Redis accepts entries again; publishing resumed", config.owner());
      saidFull = false;
    }
    backoffMillis = FIRST_BACKOFF_MILLIS;
    health.cycleSucceeded();
  }

  /**
   * A cycle failed: logs it (one line for a database or Redis failure, the whole trace for anything else), reports it,
   * runs {@code forgetProgress} and pauses. Returns false when the pause was interrupted (the relay is closing).
   */
  boolean cycleFailed(Throwable e, Runnable forgetProgress) {
    long pause = backoffMillis;
    health.cycleFailed(e);
    RedisMemory.Full full = health.fullEpisode();
    if (full != null) {
      if (!saidFull) {
        log.warn("relay {}: Redis is full (maxmemory with noeviction) and refuses new entries: {}. Publishing waits"
            + " until consumer groups finish entries and the relay trims them (retrying, this is said once per"
            + " episode)", config.owner(), full.describe());
        saidFull = true;
      } else {
        log.debug("relay {}: Redis still full, retrying in {} ms: {}", config.owner(), pause, full.describe());
      }
    } else if (e instanceof SQLException || e instanceof JedisException) {
      log.warn("relay {} cycle failed, retrying in {} ms: {}", config.owner(), pause, e.toString());
    } else {
      // A bug or an Error must not end the relay silently while it still says RUNNING: the whole trace.
      log.error("relay {} cycle failed unexpectedly, retrying in {} ms", config.owner(), pause, e);
    }
    notify(() -> listener.failed(e));
    notify(() -> faults.afterFailedCycle(e, Duration.ofMillis(pause)));
    forgetProgress.run();
    try {
      Thread.sleep(pause);
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      return false;
    }
    backoffMillis = Math.min(config.publishing().idlePollInterval().toMillis() * 5, backoffMillis * 2);
    return true;
  }

  /**
   * Runs a listener or fault hook; whatever it throws, an {@link Error} included, is logged and survived: a bug in a
   * callback must not stop the relay it reports on.
   */
  void notify(Runnable callback) {
    try {
      callback.run();
    } catch (RuntimeException e) {
      log.warn("relay listener failed: {}", e.toString());
    } catch (Throwable e) {
      log.error("relay listener failed", e);
    }
  }

  /** What escapes a thread of the relay ends it, logged with its trace. */
  void uncaught(Thread t, Throwable e) {
    log.error("relay {}: thread {} died", config.owner(), t.getName(), e);
  }
}
