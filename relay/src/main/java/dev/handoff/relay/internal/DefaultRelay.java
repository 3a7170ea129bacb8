package dev.handoff.relay.internal;

import dev.handoff.core.Health;
import dev.handoff.core.ShardId;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.MetricsRefresher;
import dev.handoff.core.internal.Notifications;
import dev.handoff.core.internal.Statements;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayCycle;
import dev.handoff.relay.RetentionReport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The {@link Relay}: its lifecycle (start, close with its drain) and the one thread whose loop runs the jobs
 * ({@link RelayJobs}: the leases, publishing and retention, under one work lock, so {@code relayOnce()} and
 * {@code maintainOnce()} never overlap the loop) and paces them; plus one thread listening for appends'
 * notifications, and one renewing the leases ({@link LeaseRenewer}), stopped last. The jobs share the owned shards
 * through one {@link ShardTable}. What a failure does (the backoff, a throwing listener, a dying thread) is
 * {@link RelayFailures}'.
 */
public final class DefaultRelay implements Relay {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private enum State { NEW, RUNNING, CLOSING, CLOSED }

  private final DataSource dataSource;
  private final DataSource notificationDataSource;
  private final RelayConfig config;
  private final String[] topicNames;
  private final RelayMaintenance maintenance;
  private final Waiter waiter = new Waiter();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  // Volatile: health() reads them from any thread.
  private volatile Thread loop;
  private volatile Thread listenThread;
  private NotificationListener notifications;
  private final ShardTable table;
  private final LeaseKeeper leaseKeeper;
  private final LeaseRenewer renewer;
  private final ShardPublisher publisher;
  private final RelayJobs jobs;
  private final RelayFailures failures;
  private final RelayHealth health;
  private volatile MetricsRefresher metrics;
  private final UnifiedJedis redis; // the relay's own pool, closed with it

  /**
   * @param notificationDataSource where the LISTEN connection comes from; {@code dataSource} when null
   * @param redis the relay's own client, which it closes when it closes
   */
  public DefaultRelay(DataSource dataSource, DataSource notificationDataSource, UnifiedJedis redis,
      RelayConfig config, RelayCollaborators collaborators) {
    this.dataSource = Statements.sessionFree(dataSource);
    this.redis = redis;
    // The pool itself, not the session-free wrapper: a LISTEN connection that fails is evicted from it by handle.
    this.notificationDataSource = notificationDataSource != null ? notificationDataSource : dataSource;
    this.config = config;
    this.health = new RelayHealth(config, collaborators);
    this.failures = new RelayFailures(config, collaborators, health);
    // Streams or lists: where the rows go; everything else is the same for both.
    RedisTransport streams = config.transport() == Transport.LIST
        ? new RedisLists(redis, config.publishing().listCapacity())
        : new RedisStreams(redis);
    LeaseQueries leases = new LeaseQueries(config.schema());
    OutboxQueries outbox = new OutboxQueries(config.schema());
    this.topicNames = config.topics().stream().map(TopicConfig::name).toArray(String[]::new);
    this.maintenance = new RelayMaintenance(config, collaborators, streams, leases, outbox, topicNames,
        failures::notify, config.transport() == Transport.STREAM
            ? new DeletionWatch(config, collaborators, redis, failures::notify) : null);
    this.renewer = new LeaseRenewer(config, this.dataSource, leases);
    this.table = new ShardTable(config, collaborators, streams, leases, outbox, failures::notify, health.rewinds(),
        renewer, health::leaseLost);
    this.leaseKeeper = new LeaseKeeper(config, collaborators, leases, streams, table, renewer, failures::notify,
        health.rewinds());
    this.publisher = new ShardPublisher(config, collaborators, streams, leases, outbox, maintenance, table,
        this::autocommit, failures::notify, health.memory(), health.rewinds());
    this.jobs = new RelayJobs(config, table, leaseKeeper,
        new LeaseRound(config, table, leaseKeeper, publisher, renewer, this::autocommit), publisher, maintenance,
        health, this::autocommit);
  }

  /** Internal: the refresher of this relay's gauges (see {@code RelayBuilder.meterRegistry}), which close stops. */
  public void attachMetrics(MetricsRefresher refresher) {
    this.metrics = refresher;
  }

  @Override
  public RelayConfig config() {
    return config;
  }

  @Override
  public Optional<RetentionReport> lastRetention() {
    return Optional.ofNullable(maintenance.last());
  }

  @Override
  public Set<ShardId> ownedShards() {
    return table.view();
  }

  @Override
  public Health health() {
    State s = state.get();
    return health.report(s == State.RUNNING ? null : s == State.NEW ? "not-started" : "closed", loop, listenThread,
        renewer.silentNanos());
  }

  /** Whether notifications reach this relay now (see {@link NotificationListener#hearing()}). */
  boolean hearing() {
    NotificationListener n = notifications;
    return n != null && n.hearing();
  }

  /** Whether this relay sleeps on every shard it owns: appends to them notify, and nothing else does. */
  boolean asleep() {
    NotificationListener n = notifications;
    return n != null && n.asleepOn(table.view());
  }

  /** The backend pid of this relay's LISTEN session, or -1 while it has none. */
  int listeningBackend() {
    NotificationListener n = notifications;
    return n == null ? -1 : n.backend();
  }

  @Override
  public void start() {
    // A topic declared with another shard count fails here, in the caller's thread; a database not reachable yet is
    // the loop's to wait for, and it checks the same before taking any shard.
    try (Connection c = autocommit()) {
      LeaseKeeper.requireDeclaredShards(c, config);
    } catch (SQLException e) {
      log.warn("relay {}: could not check its topics' shard counts at start ({}); it checks them once connected",
          config.owner(), e.toString());
    }
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException("relay " + config.owner() + " was already started or closed");
    }
    log.info("relay {} starting: schema {}, transport {}, topics {}, lease ttl {}, batch {}..{}, retention {}",
        config.owner(), config.schema(),
        config.transport() == Transport.LIST ? "list (capacity " + config.publishing().listCapacity() + ")" : "stream",
        config.topics().stream().map(t -> t.name() + "x" + t.shards()).collect(Collectors.joining(",")),
        config.leases().ttl(), config.publishing().minBatchSize(), config.publishing().maxBatchSize(),
        config.retention().outboxRetention());
    notifications = new NotificationListener(notificationDataSource, dataSource,
        config.schema(), Set.of(topicNames), waiter, config.owner(),
        config.publishing().idlePollInterval());
    listenThread = new Thread(notifications, "handoff-relay-listen-" + config.owner());
    listenThread.setDaemon(true);
    listenThread.setUncaughtExceptionHandler(failures::uncaught);
    listenThread.start();
    loop = new Thread(this::runLoop, "handoff-relay-" + config.owner());
    loop.setUncaughtExceptionHandler(failures::uncaught);
    renewer.start(loop, failures::uncaught);
    loop.start();
  }

  @Override
  public RelayCycle relayOnce() {
    State now = state.get();
    if (now == State.CLOSING || now == State.CLOSED) {
      throw new IllegalStateException("relay " + config.owner() + " is " + now.name().toLowerCase());
    }
    return jobs.relayOnce();
  }

  @Override
  public RetentionReport maintainOnce() {
    State now = state.get();
    if (now == State.CLOSING || now == State.CLOSED) {
      throw new IllegalStateException("relay " + config.owner() + " is " + now.name().toLowerCase());
    }
    RetentionReport report = jobs.maintainOnce();
    // Outside the work lock and without the connection: a refresh borrows its own and must not hold up the loop.
    MetricsRefresher refresher = metrics;
    if (refresher != null) {
      refresher.refreshNow();
    }
    return report;
  }

  @Override
  public boolean close(Duration drainTimeout) {
    // Set before the state changes, so that the loop, once it sees CLOSING, drains for the caller's time. The
    // first close's deadline stands.
    drainDeadlineNanos.compareAndSet(0, System.nanoTime() + drainTimeout.toNanos());
    State previous = state.getAndUpdate(s -> s == State.CLOSED ? State.CLOSED : State.CLOSING);
    if (previous == State.CLOSED || previous == State.CLOSING) {
      return firstCloseOutcome(drainTimeout);
    }
    boolean drained = false;
    try {
      drained = stopAndDrain(drainTimeout);
      return drained;
    } finally {
      MetricsRefresher.close(metrics);
      redis.close(); // a thread still in a call fails there, and stops at its next look at the state
      closeOutcome.complete(drained);
      if (loop != null && !loop.isAlive()) {
        state.set(State.CLOSED);
      }
    }
  }

  /** A later close reports the first one's outcome, waiting up to its own timeout for that close to end. */
  private boolean firstCloseOutcome(Duration timeout) {
    try {
      return closeOutcome.get(timeout.toMillis() + 3_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    }
  }

  private boolean stopAndDrain(Duration drainTimeout) {
    log.info("relay {} closing: draining for up to {}", config.owner(), drainTimeout);
    long deadline = drainDeadlineNanos.get();
    if (notifications != null) {
      notifications.stop();
    }
    boolean drained;
    if (loop != null) {
      waiter.wake();
      join(loop, deadline);
      if (loop.isAlive()) {
        log.warn("relay {} did not drain within {}; interrupting it (assigned rows stay for the next owner)",
            config.owner(), drainTimeout);
        loop.interrupt();
        join(loop, System.nanoTime() + 2_000_000_000L);
      }
      if (loop.isAlive()) {
        // Not CLOSED while it runs: whoever closes the database pools after this must know the thread may still
        // use them (the relay's own Redis pool is closed by close(), and the thread's next call there fails).
        log.error("relay {} thread is still running after its drain deadline and an interrupt; it stops at its"
            + " next check of the state (stuck in a database or Redis call?)", config.owner());
        return false;
      }
      drained = drainedFlag;
    } else {
      drained = drain(deadline);
    }
    if (listenThread != null) {
      join(listenThread, System.nanoTime() + 1_000_000_000L);
    }
    state.set(State.CLOSED);
    log.info("relay {} closed ({})", config.owner(), drained ? "drained" : "not fully drained");
    return drained;
  }

  private volatile boolean drainedFlag;
  /** The drain deadline of the close in progress: the caller's, not the configured default. */
  private final AtomicLong drainDeadlineNanos = new AtomicLong();
  private final CompletableFuture<Boolean> closeOutcome = new CompletableFuture<>();

  private void runLoop() {
    try {
      loopUntilClosed();
    } finally {
      // Stopped last: the drain above ran under renewed leases; a thread that dies (a crash) renews nothing more.
      renewer.stop();
    }
  }

  private void loopUntilClosed() {
    CyclePacing pacing = new CyclePacing(config.publishing().idlePollInterval());
    while (state.get() == State.RUNNING) {
      renewer.checkIn();
      boolean found = false;
      try {
        found = jobs.cycle();
        if (found && notifications != null) {
          notifications.requestWake(); // awake and busy: appends need not notify
        }
        failures.cycleSucceeded();
        if (found || publisher.mayHaveMore()) {
          // Rows keep coming: look again at once, as nothing announces them while the relay is awake. A pause here
          // would be a wait for every row, and the next cycle's transaction marks the batches this one wrote.
          pacing.busy();
          continue;
        }
        long waitMillis = nextWait(pacing);
        long untilLeases = Math.max(1, (leaseKeeper.nextCheckNanos() - System.nanoTime()) / 1_000_000);
        waiter.await(Math.min(waitMillis, untilLeases));
      } catch (InterruptedException e) {
        if (state.get() != State.RUNNING) {
          Thread.currentThread().interrupt(); // close() gave up waiting: stop now
          break;
        }
        log.warn("relay {} was interrupted while running, not by close(); carrying on", config.owner());
      } catch (VirtualMachineError e) {
        throw e; // out of memory or stack: the thread ends here, as the process would; health says DOWN
      } catch (Throwable e) {
        if (state.get() != State.RUNNING || !failures.cycleFailed(e, jobs::forgetProgress)) {
          break;
        }
      }
    }
    if (state.get() == State.CLOSING) {
      drainedFlag = drain(drainDeadlineNanos.get());
      // A close that gave up on this thread returned without marking the relay closed; it is closed now.
      if (closeOutcome.isDone()) {
        state.set(State.CLOSED);
      }
    }
  }

  /**
   * How long the loop waits now, and whether it falls asleep first. A relay that keeps finding nothing for
   * {@link CyclePacing#SLEEP_AFTER_MILLIS} asks the listener to sleep on its shards ({@link Notifications}): from
   * then on appends to them notify, and the relay waits up to its longest poll. Until then it polls, and appends do
   * not notify.
   */
  private long nextWait(CyclePacing pacing) {
    NotificationListener n = notifications;
    boolean mayNotify = n != null && n.hearing() && !publisher.rowsLeftWaiting() && !table.holding();
    Set<ShardId> shards = table.view();
    boolean asleep = mayNotify && n.asleepOn(shards);
    long waitMillis = pacing.nextWaitMillis(table.holding(), asleep);
    if (mayNotify && !asleep && !shards.isEmpty() && waitMillis >= CyclePacing.SLEEP_AFTER_MILLIS) {
      n.requestSleep(shards); // the listener wakes the loop once it holds the locks, for a last look
    }
    return waitMillis;
  }

  /** Publishes every row already assigned, releases the leases and leaves; true if nothing assigned was left. */
  private boolean drain(long deadlineNanos) {
    boolean drained;
    try {
      drained = jobs.drain(deadlineNanos);
    } catch (SQLException | RuntimeException e) {
      log.warn("relay {} could not drain cleanly ({}); the next owner publishes what is left after the lease TTL",
          config.owner(), e.toString());
      return false;
    }
    return drained;
  }

  // ---------------------------------------------------------------------------------------------------------------

  private Connection autocommit() throws SQLException {
    Connection c = dataSource.getConnection();
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true);
    }
    return c;
  }

  private static void join(Thread t, long deadlineNanos) {
    long millis = Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000);
    try {
      t.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
