package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.RetryLaterException;
import dev.handoff.consumer.internal.Settled.Failure;
import dev.handoff.consumer.status.PausedWorker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import redis.clients.jedis.exceptions.JedisException;

/**
 * One worker of either transport: it gathers a batch, then {@link #settle settles} it the one way both share:
 * one transaction through the {@link BatchSettler}, the transport's acknowledgement of exactly what committed (never
 * before the commit), the transport's hold of what failed until its backoff is over, and the outcome reported.
 * What a transport gathers, how it acknowledges and how it holds a failure for its retry are its own.
 *
 * <p>Not thread-safe: one thread runs a worker (its own, or the caller of {@code pollOnce} under the worker's lock).
 */
abstract class DeliveryWorker implements WorkerLoop {

  /** What every worker of one consumer shares. */
  record Shared(ConsumerConfig config, Collaborators collaborators, BatchSettler settler, OutcomeReporter reporter,
      BooleanSupplier running, BooleanSupplier abandoning, Logger log, String label, Runnable afterRedisFailure) {}

  final int index;
  final String name;
  protected final Shared shared;
  protected final ConsumerConfig config;
  protected final Clock clock;
  private final Backoff backoff;
  private Throwable lastDatabaseError;
  private volatile PausedWorker pause;
  // What began the pause, for health(): a Redis failure, a handler's RetryLaterException, or the database.
  private volatile String pauseCode;
  // Set when a replacement thread takes over this worker, cleared by its first step that goes through.
  private volatile boolean replacedUnproven;

  DeliveryWorker(Shared shared, int index) {
    this.shared = shared;
    this.config = shared.config();
    this.clock = shared.collaborators().clock();
    this.index = index;
    this.name = config.workerName(index);
    this.backoff = new Backoff(config.retries().initialBackoff(), config.retries().maxBackoff());
  }

  /** Gathers one batch and settles it; {@code blocking} only from the worker's own thread, never from pollOnce. */
  abstract PollResult step(boolean blocking);

  @Override
  public final Throwable blockingStep() {
    step(true);
    return lastDatabaseError;
  }

  @Override
  public void databaseFailed(Throwable error) {
    environmentFailed(error);
  }

  @Override
  public void redisFailed(JedisException e) {
    shared.afterRedisFailure().run();
    environmentFailed(e);
  }

  @Override
  public void stepSucceeded() {
    replacedUnproven = false;
    PausedWorker p = pause;
    if (p != null) {
      pause = null;
      Duration pausedFor = Duration.between(p.since(), Instant.now(clock));
      shared.log().info("{} {}: resumed after {} ms and {} failed retr(ies) since: {}", shared.label(), name,
          pausedFor.toMillis(), p.retries(), p.reason());
      shared.reporter().emit(l -> l.resumed(name, pausedFor));
    }
  }

  /** The health code of the current pause ({@code redis-unreachable} and so on), or null while it works. */
  String pauseCode() {
    return pause == null ? null : pauseCode;
  }

  /** Whether a replacement thread runs this worker and has not yet completed a step. */
  boolean replacedUnproven() {
    return replacedUnproven;
  }

  /**
   * Called before a new thread takes over this worker after its thread died: what the dead thread held is unknown,
   * so the transport reads its own unfinished work again, as after a restart.
   */
  void replaced() {
    replacedUnproven = true;
  }

  /** Called with the thread that runs this worker, before it starts. */
  void started(Thread t) {}

  /** The pause the environment's failure put this worker in, or null while it works. */
  PausedWorker pause() {
    return pause;
  }

  /** One WARN when a pause begins, not one per attempt or per message: an outage is one event. */
  private void environmentFailed(Throwable cause) {
    PausedWorker p = pause;
    if (p == null) {
      String reason = oneLine(cause) + (Blame.missingObject(cause) ? MIGRATION_HINT : "");
      pauseCode = pauseCodeOf(cause);
      pause = new PausedWorker(name, reason, Instant.now(clock), 0);
      shared.log().warn("{} {}: paused by a failure of its environment, not of a message ({}); retrying with"
          + " backoff, counting no delivery, until an attempt goes through", shared.label(), name, reason);
      shared.reporter().emit(l -> l.paused(name, cause));
    } else {
      pause = new PausedWorker(p.worker(), p.reason(), p.since(), p.retries() + 1);
      shared.log().debug("{} {}: still paused: {}", shared.label(), name, oneLine(cause));
    }
  }

  /**
   * Added to the reason of a pause on a table, column or function that does not exist: most often a consumer that
   * was upgraded before its schema, which the raw error does not say.
   */
  static final String MIGRATION_HINT = "; if that is one of handoff's, its schema is not migrated as far as this"
      + " version needs: apply handoff's migrations (HandoffMigrations.migrate, or handoff.jar migrate)";

  private static String pauseCodeOf(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof RetryLaterException) {
        return "infrastructure-pause";
      }
      if (t instanceof JedisException) {
        return "redis-unreachable";
      }
      if (t instanceof GhostCheck.NotTheProducersDatabase) {
        return "not-the-producers-database";
      }
    }
    return "database-unreachable";
  }

  private static String oneLine(Throwable e) {
    return e.toString().replaceAll("\\s*\\R\\s*", " ").strip();
  }

  /**
   * Settles {@code batch} and applies its outcome: acknowledges what committed, holds what failed for its backoff,
   * leaves what was abandoned to the transport's own recovery, and reports.
   *
   * @param reclaimed how many of the batch were taken over from other consumers, for the poll result
   */
  protected final PollResult settle(List<Delivery> batch, int reclaimed) {
    lastDatabaseError = null;
    if (batch.isEmpty()) {
      return PollResult.EMPTY;
    }
    beforeSettle(batch);
    try {
      long started = System.nanoTime();
      ConsumerFaults faults = shared.collaborators().faults();
      Settled s = settleIn(batch, faults);
      if (s.committed() > 0) {
        faults.at(ConsumerFaults.Point.AFTER_COMMIT);
      }
      Map<String, List<Delivery>> acks = new LinkedHashMap<>();
      for (Delivery d : s.toAcknowledge()) {
        acks.computeIfAbsent(d.streamKey, k -> new ArrayList<>()).add(d);
      }
      acknowledge(acks);
      Map<Delivery, Duration> backoffs = new HashMap<>();
      for (Failure f : s.failed) {
        backoffs.put(f.delivery(), backoff.after(Math.max(1, f.delivery().deliveries)));
      }
      holdForRetry(s.failed, backoffs, s.abandoned);
      shared.reporter().report(name, s, backoffs, System.nanoTime() - started);
      lastDatabaseError = s.databaseError;
      return new PollResult(batch.size(), s.handled.size(), s.duplicates.size(),
          s.failed.size() + s.abandoned.size(), s.dead.size(), s.lost.size(), reclaimed);
    } finally {
      afterSettle();
    }
  }

  /** Settles the batch in the database: one transaction through the {@link BatchSettler}, as a delivery. */
  protected Settled settleIn(List<Delivery> batch, ConsumerFaults faults) {
    return shared.settler().settle(batch, BatchSettler.Mode.DELIVERY, faults, shared.abandoning());
  }

  /** Called with the batch before its transaction starts. */
  protected void beforeSettle(List<Delivery> batch) {}

  /** Called once the batch's outcome was applied, or its settling failed. */
  protected void afterSettle() {}

  /** Removes from Redis, per key, the deliveries whose verdict committed. */
  protected abstract void acknowledge(Map<String, List<Delivery>> byKey);

  /**
   * Keeps what failed for a retry once its backoff is over, and what was abandoned (no verdict, no delivery
   * counted) for the transport's own recovery.
   */
  protected abstract void holdForRetry(List<Failure> failed, Map<Delivery, Duration> backoffs,
      List<Delivery> abandoned);
}
