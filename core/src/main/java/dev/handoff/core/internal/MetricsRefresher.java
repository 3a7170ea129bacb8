package dev.handoff.core.internal;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the queries behind a component's gauges on a schedule of its own, on one daemon thread, so that neither the
 * component's hot path nor a scrape ever waits for them; a scrape reads the last values. A failed refresh is
 * logged (once until a refresh works again) and leaves the last values in place. Free of Micrometer types, so the
 * components can hold one without Micrometer on the class path.
 */
public final class MetricsRefresher implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(MetricsRefresher.class);

  private final String name;
  private final Runnable refresh;
  private final ReentrantLock running = new ReentrantLock();
  private final ScheduledExecutorService executor;
  private boolean failing;

  /**
   * Refreshes every {@code interval}, the first time one interval after this call: a component built and closed at
   * once (or still starting) is not queried, and its gauges read 0 until the first refresh.
   */
  public MetricsRefresher(String name, Duration interval, Runnable refresh) {
    this.name = name;
    this.refresh = refresh;
    this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "handoff-metrics-" + name);
      t.setDaemon(true);
      return t;
    });
    executor.scheduleWithFixedDelay(this::refreshQuietly, interval.toMillis(), interval.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** Refreshes now on the caller's thread (after a scheduled refresh in progress) and throws its error. */
  public void refreshNow() {
    running.lock();
    try {
      refresh.run();
    } finally {
      running.unlock();
    }
  }

  private void refreshQuietly() {
    running.lock();
    try {
      refresh.run();
      if (failing) {
        log.info("metrics of {}: refresh works again", name);
        failing = false;
      }
    } catch (RuntimeException e) {
      if (!failing) {
        log.warn("metrics of {}: refresh failed, the gauges keep their last values: {}", name, e.toString());
        failing = true;
      }
    } catch (Throwable e) {
      // Caught whatever it is: the executor would cancel every later refresh of a task that threw once.
      log.error("metrics of {}: refresh failed, the gauges keep their last values", name, e);
      failing = true;
    } finally {
      running.unlock();
    }
  }

  /** {@link #close()} on {@code refresher}, if there is one. */
  public static void close(MetricsRefresher refresher) {
    if (refresher != null) {
      refresher.close();
    }
  }

  /**
   * Stops the schedule and waits (up to 2 s) for a refresh in progress, so that none runs once the component has
   * given back its connections. The gauges keep their last values. Idempotent.
   */
  @Override
  public void close() {
    executor.shutdownNow();
    try {
      executor.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
