package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.status.PausedWorker;
import dev.handoff.core.Health;
import dev.handoff.core.internal.MetricsRefresher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;

/**
 * The lifecycle that the stream and the list consumer share: the state (new, polling, running, closed), the worker
 * threads (each running a {@link WorkerLoop}), the one housekeeping thread (lease or heartbeat renewal, the inbox
 * purge; requested dead-letter retries run beside it, see {@link GroupUpkeep}), closing with a drain deadline and
 * abandoning what is still busy after it. The operations that depend on neither the lifecycle nor the transport
 * are {@link ConsumerOperations}'. What a worker reads and acknowledges ({@link DeliveryWorker}), and what a
 * closed consumer gives back to Redis, stay with the subclasses.
 *
 * <p>Thread-safe: the state is atomic, the housekeeping executor is guarded by {@code this}, and the abandon flag
 * is volatile. {@link #newWorkerThread} is meant for {@code start()} only, which the state lets run once.
 */
abstract class AbstractConsumer extends ConsumerOperations {

  static final Duration DEFAULT_CLOSE_DEADLINE = Duration.ofSeconds(30);
  /** How often a running consumer looks for a shard of its topic past the ones it declares. */
  static final Duration SHARD_CHECK_INTERVAL = Duration.ofSeconds(10);

  private enum State { NEW, POLLING, RUNNING, CLOSED }

  // The subclass's logger, so that log lines keep the category they always had.
  private final Logger log;
  private final String kind;
  private final String label;
  private final String abandonNote;
  private final Words words;
  // Written by start() and read by close(), which may run at the same time on another thread.
  private final List<Thread> threads = new CopyOnWriteArrayList<>();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  // The first close's outcome, which every later close reports (after waiting for it, if it is still running).
  private final CompletableFuture<Boolean> closed = new CompletableFuture<>();
  private final CountDownLatch stopping = new CountDownLatch(1);
  private ScheduledExecutorService housekeeping;
  private boolean supervised; // whether the worker check is scheduled on the housekeeping; guarded by this
  private volatile boolean abandon;
  private final WorkerSlots slots;
  private final ShardCountCheck shardCount;
  private final Duration workerCheckInterval;

  /**
   * How a transport's consumer speaks of itself in exceptions and log lines.
   *
   * @param kind what the exceptions call this consumer ({@code "consumer"})
   * @param label how the lifecycle log lines start ({@code "Consumer group"})
   * @param workerLabel how a worker's log lines start ({@code "Consumer"})
   * @param unit what the transport calls one delivery ({@code "entry"})
   * @param abandonNote appended to the log line about a worker abandoned at the close deadline
   */
  record Words(String kind, String label, String workerLabel, String unit, String abandonNote) {}

  /**
   * @param workerCheckInterval how often a worker whose thread died is looked for: the transport's renewal interval
   *     ({@code leaseRenewInterval}, a list's {@code heartbeatInterval}), within which a live worker shows it lives
   */
  AbstractConsumer(ConsumerConfig config, Collaborators collaborators, DataSource dataSource, SettleOptions settling,
      Logger log, Words words, Duration workerCheckInterval) {
    super(config, collaborators, dataSource, settling, log, words.workerLabel(), words.unit(), words.label());
    this.workerCheckInterval = workerCheckInterval;
    this.log = log;
    this.words = words;
    this.kind = words.kind();
    this.label = words.label();
    this.abandonNote = words.abandonNote();
    this.slots = new WorkerSlots(this::newWorkerThread, log, label + " '" + config.group() + "'");
    this.shardCount = new ShardCountCheck(config, this::shardKey, this::keyExists, log, label);
  }

  /** The Redis key of shard {@code shard} of the topic on this transport: its stream, or its list. */
  protected abstract String shardKey(int shard);

  /** Whether {@code key} exists in Redis. */
  protected abstract boolean keyExists(String key);

  /**
   * What every worker of this consumer shares.
   *
   * @param afterRedisFailure run when a worker meets a Redis failure, before it pauses
   */
  protected final DeliveryWorker.Shared sharedByWorkers(Runnable afterRedisFailure) {
    return new DeliveryWorker.Shared(config, collaborators, settler, reporter(), this::running, this::abandoning,
        log, words.workerLabel(), afterRedisFailure);
  }

  /** The pauses of {@code workers}, in worker order. */
  protected static List<PausedWorker> pausedOf(DeliveryWorker[] workers) {
    List<PausedWorker> out = new ArrayList<>();
    for (DeliveryWorker w : workers) {
      PausedWorker p = w.pause();
      if (p != null) {
        out.add(p);
      }
    }
    return out;
  }

  /** Moves a new consumer to running, or throws: a consumer starts once. */
  protected final void beginStart() {
    if (state.get() == State.NEW) {
      requireDeclaredShards(kind + " of group '" + config.group() + "'", log);
    }
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException(kind + " of group '" + config.group() + "' was already "
          + state.get().name().toLowerCase() + "; a consumer starts once");
    }
    try {
      shardCount.check();
    } catch (RuntimeException e) {
      log.debug(label + " '{}': the shard count check waits for Redis", config.group(), e);
    }
  }

  /**
   * What {@code start()} throws when a step of it failed: a close that ran meanwhile (and closed the connections the
   * step used) won the race, which {@code start()} reports as it reports a close that came first; any other failure
   * is thrown as it is.
   */
  protected final RuntimeException startFailed(RuntimeException e) {
    return state.get() == State.CLOSED
        ? new IllegalStateException(kind + " of group '" + config.group() + "' was closed while it started", e)
        : e;
  }

  /** Moves a new consumer to polling (or leaves it there), or throws if it was started or closed. */
  protected final void beginPoll() {
    if (state.get() == State.NEW) {
      requireDeclaredShards(kind + " of group '" + config.group() + "'", log);
    }
    if (!state.compareAndSet(State.NEW, State.POLLING) && state.get() != State.POLLING) {
      throw new IllegalStateException("pollOnce is for consumers that were not started; " + kind + " of group '"
          + config.group() + "' is " + state.get().name().toLowerCase());
    }
  }

  protected final boolean running() {
    return state.get() == State.RUNNING;
  }

  /** True once close gave up waiting: batches still being settled roll back rather than commit. */
  protected final boolean abandoning() {
    return abandon;
  }

  /**
   * Starts {@code w} on a thread of its own, and (once, on the housekeeping thread) the check that gives a worker
   * whose thread died a new one every {@code workerCheckInterval}.
   */
  protected final synchronized void startWorker(DeliveryWorker w, String threadName) {
    if (housekeeping != null && !supervised) {
      long every = workerCheckInterval.toMillis();
      Runnable check = () -> slots.replaceDead(this::running);
      housekeeping.scheduleWithFixedDelay(guarded("the worker check", check), every, every, TimeUnit.MILLISECONDS);
      long shardsEvery = SHARD_CHECK_INTERVAL.toMillis();
      housekeeping.scheduleWithFixedDelay(guarded("the shard count check", shardCount::check), shardsEvery,
          shardsEvery, TimeUnit.MILLISECONDS);
      supervised = true;
    }
    slots.start(w, () -> runWorker(w), threadName);
  }

  /**
   * See {@link dev.handoff.consumer.HandoffConsumer#health}: DOWN before start (or when only polled) and once closed;
   * else what the workers say.
   */
  public final Health health() {
    State s = state.get();
    if (s == State.CLOSED) {
      return Health.down("closed", label + " '" + config.group() + "' is closed");
    }
    if (s != State.RUNNING) {
      return Health.down("not-started", label + " '" + config.group() + "' was not started");
    }
    String mismatch = shardCount.finding();
    if (mismatch != null) {
      return Health.down("shards-mismatch", label + " '" + config.group() + "': " + mismatch);
    }
    Health workers = slots.health();
    List<Health.Reason> more = degradedReasons();
    if (more.isEmpty() || workers.status() == Health.Status.DOWN) {
      return workers;
    }
    List<Health.Reason> all = new ArrayList<>(workers.reasons());
    all.addAll(more);
    return Health.of(all);
  }

  /** What makes a running consumer DEGRADED beside its workers (an ordered group's blocked shards); none here. */
  protected List<Health.Reason> degradedReasons() {
    return List.of();
  }

  /** A daemon worker thread that close will wait for; the caller starts it. */
  private Thread newWorkerThread(Runnable body, String name) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.setUncaughtExceptionHandler(this::uncaught);
    threads.add(t);
    return t;
  }

  protected final synchronized boolean housekeepingStarted() {
    return housekeeping != null;
  }

  /** Creates the housekeeping executor (one daemon thread) that close shuts down; the caller schedules on it. */
  protected final synchronized ScheduledExecutorService newHousekeeping(String threadName) {
    // Close shuts the executor down under this same lock: one created after a racing close would never be.
    if (state.get() == State.CLOSED) {
      throw new IllegalStateException(kind + " of group '" + config.group() + "' was closed while it started");
    }
    housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      t.setUncaughtExceptionHandler(this::uncaught);
      return t;
    });
    return housekeeping;
  }

  /**
   * Schedules the upkeep of a started consumer (see {@link GroupUpkeep}): the automatic inbox purge on the
   * housekeeping thread, when the configuration asks for it, and the requested dead-letter retries on a thread of
   * their own. A failure is logged and the next run tries again.
   */
  protected final synchronized void scheduleUpkeep() {
    if (housekeeping != null) {
      upkeep.schedule(housekeeping, this::guarded);
    }
  }

  /** Runs one worker until the consumer stops running; see {@link WorkerLoop#run}. */
  protected final void runWorker(WorkerLoop w) {
    WorkerLoop.run(w, this::running, stopping);
  }

  private volatile MetricsRefresher metrics; // see ConsumerBuilder.meterRegistry; stopped by close

  /** Internal: the refresher of this consumer's gauges, which close stops. */
  public final void attachMetrics(MetricsRefresher refresher) {
    this.metrics = refresher;
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#maintainOnce()}. */
  public final int maintainOnce() {
    if (state.get() == State.CLOSED) {
      throw new IllegalStateException(label + " '" + config.group() + "' is closed");
    }
    renewHeldWork();
    int ran = runRequestedNow();
    MetricsRefresher refresher = metrics;
    if (refresher != null) {
      refresher.refreshNow();
    }
    return ran;
  }

  /** Renews what the workers hold, as the schedule does; nothing by default. */
  void renewHeldWork() {}

  /** Closes with the default deadline of 30 s; see {@link #close(Duration)}. */
  public final void close() {
    close(DEFAULT_CLOSE_DEADLINE);
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#close(Duration)}. */
  public final boolean close(Duration deadline) {
    return closeWithin(deadline);
  }

  /**
   * Stops the workers, waiting up to {@code deadline} for their batches; past it, abandons them. Then stops the
   * housekeeping and lets the subclass give back what it holds. A later close does nothing more: it reports the
   * first close's outcome, waiting up to its own deadline for that close to finish.
   *
   * @return false if some work was abandoned (by this close or the first one)
   */
  protected final boolean closeWithin(Duration deadline) {
    State previous = state.getAndSet(State.CLOSED);
    if (previous == State.CLOSED) {
      return firstCloseOutcome(deadline);
    }
    boolean clean = false;
    try {
      clean = stopAndGiveBack(previous, deadline);
      return clean;
    } finally {
      closed.complete(clean);
    }
  }

  private boolean firstCloseOutcome(Duration deadline) {
    try {
      // The first close may take its own deadline plus the grace for interrupted workers.
      return closed.get(deadline.toMillis() + 2_500, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    }
  }

  private boolean stopAndGiveBack(State previous, Duration deadline) {
    log.info(label + " '{}' closing (consumer {})", config.group(), config.consumerName());
    stopping.countDown();
    long end = System.nanoTime() + deadline.toNanos();
    boolean clean = true;
    for (Thread t : threads) {
      joinUntil(t, end);
    }
    for (Thread t : threads) {
      if (t.isAlive()) {
        clean = false;
        abandon = true;
        log.warn(label + " '{}': {} still busy after the close deadline of {}; abandoning its batch" + abandonNote,
            config.group(), t.getName(), deadline);
        t.interrupt();
      }
    }
    for (Thread t : threads) {
      joinUntil(t, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
    }
    upkeep.close(Duration.ofNanos(Math.max(0, end - System.nanoTime())).plusSeconds(2));
    synchronized (this) {
      if (housekeeping != null) {
        housekeeping.shutdownNow();
      }
    }
    MetricsRefresher.close(metrics);
    afterWorkersStopped(previous != State.NEW, clean);
    log.info(label + " '{}' closed{}", config.group(), clean ? "" : " (some work was abandoned)");
    return clean;
  }

  /**
   * Called once by close after the workers and the housekeeping stopped: give back or unregister what this
   * consumer holds, then close the Redis connections.
   *
   * @param used whether the consumer was started or polled
   * @param clean whether no work was abandoned
   */
  protected abstract void afterWorkersStopped(boolean used, boolean clean);

  private static void joinUntil(Thread t, long endNanos) {
    long left = endNanos - System.nanoTime();
    if (left <= 0) {
      return;
    }
    try {
      t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * A housekeeping task that survives whatever it throws: an executor silently cancels a periodic task that threw
   * once, and lease renewal or heartbeats that stopped without a word would let other consumers take live work.
   */
  protected final Runnable guarded(String what, Runnable task) {
    return () -> {
      try {
        task.run();
      } catch (Throwable e) {
        log.error(label + " '{}': {} failed; it runs again at its next turn", config.group(), what, e);
      }
    };
  }

  /** What escapes a worker ends its thread, logged with its trace. */
  private void uncaught(Thread t, Throwable e) {
    log.error(label + " '{}': {} died", config.group(), t.getName(), e);
  }
}
