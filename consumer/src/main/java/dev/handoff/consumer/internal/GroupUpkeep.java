package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.InboxPurgeResult;
import dev.handoff.consumer.ReplayResult;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * A group's upkeep that does not depend on the transport: dead-letter retries (called, or requested by an operator
 * and picked up every {@code retryRequestInterval}) and the inbox purge (called, or automatic on the housekeeping).
 *
 * <p>Requested retries run on a thread of their own, not on the housekeeping thread: a retry runs the handler,
 * and a slow one must not hold back lease renewals or heartbeats, whose delay would let other consumers take live
 * work.
 *
 * <p>Thread-safe: the retry executor is guarded by {@code this}, and a request is claimed by a row lock
 * ({@code FOR UPDATE SKIP LOCKED}), so the consumers of a group never run one request twice.
 */
final class GroupUpkeep {

  private final ConsumerConfig config;
  private final DeadLetterService deadLetters;
  private final InboxPurger purger;
  private final OutcomeReporter reporter;
  private final Logger log;
  private final String label;
  private ScheduledExecutorService retries; // guarded by this
  private volatile boolean stopping;
  private final Supplier<Optional<ReplayResult>> replays;
  /** An ordered group's shards held by this consumer, through which its requested retries run; null if unordered. */
  private volatile Supplier<List<RetryLane>> lanes;

  /** One owned shard of an ordered group: runs a requested retry of its stream under its lock and lease. */
  interface RetryLane {
    DeadLetterService.Requested run(DeadLetterService deadLetters);
  }

  /** Routes requested retries through the shards this consumer holds (ordered groups). */
  void routeRetries(Supplier<List<RetryLane>> lanes) {
    this.lanes = lanes;
  }

  GroupUpkeep(ConsumerConfig config, DeadLetterService deadLetters, InboxPurger purger, OutcomeReporter reporter,
      Logger log, String label, Supplier<Optional<ReplayResult>> replays) {
    this.replays = replays;
    this.config = config;
    this.deadLetters = deadLetters;
    this.purger = purger;
    this.reporter = reporter;
    this.log = log;
    this.label = label;
  }

  /**
   * Schedules the automatic inbox purge on {@code housekeeping} (when the retention asks for it) and starts the
   * pick-up of requested retries on a thread of its own, both surviving their failures through {@code guarded}.
   */
  synchronized void schedule(ScheduledExecutorService housekeeping, BiFunction<String, Runnable, Runnable> guarded) {
    if (config.upkeep().inboxRetention().automatic()) {
      long every = config.upkeep().inboxRetention().purgeInterval().toMillis();
      housekeeping.scheduleWithFixedDelay(guarded.apply("the inbox purge", this::purgeQuietly), every, every,
          TimeUnit.MILLISECONDS);
    }
    if (retries == null && !stopping) {
      retries = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "handoff-dlq-retries-" + config.group());
        t.setDaemon(true);
        return t;
      });
      long every = config.upkeep().retryRequestInterval().toMillis();
      retries.scheduleWithFixedDelay(guarded.apply("the requested dead-letter retries", this::runRequested), every,
          every, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Stops the pick-up of requested retries, waiting up to {@code wait} for a retry in progress (its transaction
   * commits or rolls back, never outlives the consumer), then interrupting it.
   */
  void close(Duration wait) {
    stopping = true;
    ScheduledExecutorService r;
    synchronized (this) {
      r = retries;
    }
    if (r == null) {
      return;
    }
    r.shutdown();
    try {
      if (!r.awaitTermination(Math.max(1, wait.toMillis()), TimeUnit.MILLISECONDS)) {
        r.shutdownNow();
      }
    } catch (InterruptedException e) {
      r.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Runs what operators requested of the group: its open dead-letter retry requests, then its open replay requests.
   *
   * @return how many requests ran
   */
  int runRequested() {
    return runRequestedRetries() + runRequestedReplays();
  }

  /**
   * Runs the group's open replay requests (an operator's {@code handoff replay}), oldest first, one at a time, until
   * none is left (or the consumer closes); a database failure leaves the request for the next turn.
   */
  private int runRequestedReplays() {
    int ran = 0;
    while (!stopping) {
      Optional<ReplayResult> r;
      try {
        r = replays.get();
      } catch (ConsumerException e) {
        log.warn(label + " '{}': {} ({}); the request stays and runs again in {}", config.group(), e.getMessage(),
            e.getCause(), config.upkeep().retryRequestInterval());
        return ran;
      }
      if (r.isEmpty()) {
        return ran;
      }
      ran++;
      ReplayResult done = r.get();
      log.info(label + " '{}': requested replay ran: {} handled, {} already processed, {} failed", config.group(),
          done.handled(), done.duplicates(), done.failed());
    }
    return ran;
  }

  /**
   * Runs the group's open retry requests, oldest first, each in its own transaction, until none is left (or the
   * consumer closes). A handler that fails again leaves its message dead with the failure recorded and the request
   * cleared, with one WARN; a database failure, or a handler failure that is the environment's (such as a
   * {@link dev.handoff.consumer.RetryLaterException}), leaves the request for the next turn.
   *
   * @return how many requests ran (retried, or failed again)
   */
  private int runRequestedRetries() {
    int ran = 0;
    while (!stopping) {
      DeadLetterService.Requested r;
      try {
        r = nextRequested();
      } catch (DeadLetterService.PostponedException e) {
        log.warn(label + " '{}': {}; it runs again in {}", config.group(), e.getMessage(),
            config.upkeep().retryRequestInterval());
        return ran;
      } catch (ConsumerException e) {
        log.warn(label + " '{}': {} ({}); the request stays and runs again in {}", config.group(), e.getMessage(),
            e.getCause(), config.upkeep().retryRequestInterval());
        return ran;
      }
      if (r == DeadLetterService.Requested.NONE) {
        return ran;
      }
      ran++;
      if (r.failure() != null) {
        log.warn(label + " '{}': requested retry of dead letter {} failed again: {}; it stays dead, with the failure"
            + " recorded and the request cleared", config.group(), r.id(), r.failure().getCause().toString());
      } else {
        reportRetried(r.id(), r.message(), "requested retry");
      }
    }
    return ran;
  }

  /** The next requested retry: any, or in an ordered group one of a shard this consumer holds, by its owner. */
  private DeadLetterService.Requested nextRequested() {
    Supplier<List<RetryLane>> route = lanes;
    if (route == null) {
      return deadLetters.runNextRequested();
    }
    for (RetryLane lane : route.get()) {
      DeadLetterService.Requested r = lane.run(deadLetters);
      if (r != DeadLetterService.Requested.NONE) {
        return r;
      }
    }
    return DeadLetterService.Requested.NONE;
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#retry}; a retry that ran tells the listener it was handled. */
  boolean retry(long deadLetterId) {
    InboundMessage m = deadLetters.retry(deadLetterId);
    if (m != null) {
      reportRetried(deadLetterId, m, "dead letter");
    }
    return m != null;
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#retryAll}. */
  int retryAll() {
    return deadLetters.retryAll(this::retry);
  }

  /** See {@link dev.handoff.consumer.StreamConsumer#purgeInbox(Instant)}. */
  long purgeInbox(Instant processedBefore) {
    return purger.purgeOrRefuse(processedBefore);
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#purgeInbox()}. */
  InboxPurgeResult purgeInbox() {
    return purger.purgeExpired();
  }

  private void reportRetried(long id, InboundMessage m, String what) {
    if (m == null) {
      log.info(label + " '{}': {} {} marked retried; its message had been processed meanwhile", config.group(),
          what, id);
      return;
    }
    reporter.emit(l -> l.handled(m));
    log.info(label + " '{}': {} {} (message {}) retried and processed", config.group(), what, id, m.messageId());
  }

  private void purgeQuietly() {
    try {
      purger.purgeExpired();
    } catch (RuntimeException e) {
      log.warn(label + " '{}': automatic inbox purge failed ({}); it runs again in {}", config.group(),
          e.toString(), config.upkeep().inboxRetention().purgeInterval());
    }
  }
}
