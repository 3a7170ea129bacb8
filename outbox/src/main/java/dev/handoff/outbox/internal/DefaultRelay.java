package dev.handoff.outbox.internal;

import dev.handoff.outbox.Relay;
import dev.handoff.outbox.RelayConfig;
import dev.handoff.outbox.RelayCycle;
import dev.handoff.outbox.RelayException;
import dev.handoff.outbox.RelayListener;
import dev.handoff.outbox.RetentionReport;
import dev.handoff.outbox.ShardId;
import dev.handoff.outbox.TopicConfig;
import dev.handoff.outbox.Transport;
import dev.handoff.outbox.internal.RedisTransport.EntryStatus;
import dev.handoff.outbox.internal.RedisTransport.PublishResult;
import dev.handoff.outbox.testkit.RelayFaults;
import dev.handoff.outbox.testkit.SimulatedCrash;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The {@link Relay}: one thread that keeps its share of the shard leases, assigns stream IDs in the database,
 * writes the entries to Redis, and marks them published; plus one thread listening for appends' notifications.
 */
public final class DefaultRelay implements Relay {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private enum State { NEW, RUNNING, CLOSING, CLOSED }

  private static final long PLANNING_CHECK_INTERVAL_NANOS = 5_000_000_000L;

  private final DataSource dataSource;
  private final RelayConfig config;
  private final RelayListener listener;
  /** Streams or lists: where the rows go; everything else here is the same for both. */
  private final RedisTransport streams;
  private final LeaseQueries leases;
  private final OutboxQueries outbox;
  private final List<ShardId> allShards;
  private final String[] topicNames;
  private final RelayMaintenance maintenance;
  private final Waiter waiter = new Waiter();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final ReentrantLock work = new ReentrantLock();
  private final Map<ShardId, OwnedShard> owned = new LinkedHashMap<>();
  private volatile Set<ShardId> ownedView = Set.of();
  private final RelayFaults faults;
  private boolean rowsEnsured;
  private long nextLeaseCheckNanos;
  private Thread loop;
  private Thread listenThread;
  private NotificationListener notifications;
  /** Set by each cycle of {@link #publishOwned}: whether the next cycle should start without waiting. */
  private boolean mayHaveMore;
  private long nextPlanningCheckNanos = System.nanoTime();

  public DefaultRelay(DataSource dataSource, UnifiedJedis redis, RelayConfig config, RelayFaults faults) {
    this.faults = faults;
    this.dataSource = dataSource;
    this.config = config;
    this.listener = config.listener();
    this.streams = config.transport() == Transport.LIST
        ? new RedisLists(redis, config.listCapacity())
        : new RedisStreams(redis);
    this.leases = new LeaseQueries(config.schema());
    this.outbox = new OutboxQueries(config.schema());
    this.allShards = config.shards();
    this.topicNames = config.topics().stream().map(TopicConfig::name).toArray(String[]::new);
    this.maintenance = new RelayMaintenance(config, streams, leases, outbox, topicNames, this::notify);
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
    return ownedView;
  }

  @Override
  public void start() {
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException("relay " + config.owner() + " was already started or closed");
    }
    log.info("relay {} starting: schema {}, transport {}, topics {}, lease ttl {}, batch {}..{}, retention {}",
        config.owner(), config.schema(),
        config.transport() == Transport.LIST ? "list (capacity " + config.listCapacity() + ")" : "stream",
        config.topics().stream().map(t -> t.name() + "x" + t.shards()).collect(Collectors.joining(",")),
        config.leaseTtl(), config.minBatchSize(), config.maxBatchSize(), config.outboxRetention());
    notifications = new NotificationListener(dataSource, Notifications.channel(config.schema()),
        Set.of(topicNames), waiter);
    listenThread = new Thread(notifications, "handoff-relay-listen-" + config.owner());
    listenThread.setDaemon(true);
    listenThread.setUncaughtExceptionHandler(this::uncaught);
    listenThread.start();
    loop = new Thread(this::runLoop, "handoff-relay-" + config.owner());
    loop.setUncaughtExceptionHandler(this::uncaught);
    loop.start();
  }

  @Override
  public RelayCycle relayOnce() {
    State now = state.get();
    if (now == State.CLOSING || now == State.CLOSED) {
      throw new IllegalStateException("relay " + config.owner() + " is " + now.name().toLowerCase());
    }
    work.lock();
    try {
      manageLeases(true);
      RelayCycle total = new RelayCycle(owned.size(), 0, 0, 0);
      RelayCycle pass;
      do {
        manageLeases(false);
        pass = publishOwned(false);
        total = new RelayCycle(owned.size(), total.assigned() + pass.assigned(),
            total.published() + pass.published(), total.republished() + pass.republished());
      } while (pass.assigned() + pass.published() + pass.republished() > 0);
      return total;
    } catch (SQLException e) {
      throw new RelayException("relay pass of " + config.owner() + " failed", e);
    } finally {
      work.unlock();
    }
  }

  @Override
  public RetentionReport maintainOnce() {
    work.lock();
    try {
      try (Connection c = autocommit()) {
        maintenance.startNow();
        RetentionReport report;
        do {
          report = maintenance.slice(c, owned, Long.MAX_VALUE / 2);
        } while (report == null);
        return report;
      }
    } catch (SQLException e) {
      throw new RelayException("maintenance of relay " + config.owner() + " failed", e);
    } finally {
      work.unlock();
    }
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
        // Not CLOSED while it runs: whoever closes the pools after this must know the thread may still use them.
        log.error("relay {} thread is still running after its drain deadline and an interrupt; it stops at its"
            + " next check of the state (stuck in a database or Redis call?)", config.owner());
        return false;
      }
      drained = drainedFlag;
    } else {
      work.lock();
      try {
        drained = drain(deadline);
      } finally {
        work.unlock();
      }
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
    long idleMillis = 0;
    long errorBackoffMillis = 100;
    while (state.get() == State.RUNNING) {
      try {
        work.lock();
        RelayCycle cycle;
        try {
          manageLeases(false);
          cycle = publishOwned(false);
          if (maintenance.due()) {
            maintainSlice(RelayMaintenance.SLICE_NANOS);
          }
        } finally {
          work.unlock();
        }
        errorBackoffMillis = 100;
        if (mayHaveMore) {
          idleMillis = 0;
          continue;
        }
        // Fast when busy, up to the idle interval when quiet; a notification cuts any wait short.
        idleMillis = idleMillis == 0 ? 5 : Math.min(config.idlePollInterval().toMillis(), idleMillis * 2);
        long untilLeases = Math.max(1, (nextLeaseCheckNanos - System.nanoTime()) / 1_000_000);
        waiter.await(Math.min(idleMillis, untilLeases));
      } catch (InterruptedException e) {
        if (state.get() != State.RUNNING) {
          Thread.currentThread().interrupt(); // close() gave up waiting: stop now
          break;
        }
        log.warn("relay {} was interrupted while running, not by close(); carrying on", config.owner());
      } catch (SimulatedCrash crash) {
        throw crash;
      } catch (SQLException | RuntimeException e) {
        if (state.get() != State.RUNNING) {
          break;
        }
        log.warn("relay {} cycle failed, retrying in {} ms: {}", config.owner(), errorBackoffMillis, e.toString());
        notify(() -> listener.failed(e));
        forgetProgress();
        try {
          Thread.sleep(errorBackoffMillis);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
        errorBackoffMillis = Math.min(config.idlePollInterval().toMillis() * 5, errorBackoffMillis * 2);
      } catch (Throwable e) {
        // An Error (a bug, a stack overflow, memory) must not end the relay silently while it still says RUNNING.
        log.error("relay {} cycle failed unexpectedly, retrying in {} ms", config.owner(), errorBackoffMillis, e);
        notify(() -> listener.failed(e));
        forgetProgress();
        if (!pauseAfterFailure(errorBackoffMillis)) {
          break;
        }
        errorBackoffMillis = Math.min(config.idlePollInterval().toMillis() * 5, errorBackoffMillis * 2);
      }
    }
    if (state.get() == State.CLOSING) {
      work.lock();
      try {
        drainedFlag = drain(drainDeadlineNanos.get());
      } finally {
        work.unlock();
      }
      // A close that gave up on this thread returned without marking the relay closed; it is closed now.
      if (closeOutcome.isDone()) {
        state.set(State.CLOSED);
      }
    }
  }

  /** Runs a slice of the due maintenance; a run still in progress afterwards brings the next cycle on at once. */
  private RetentionReport maintainSlice(long sliceNanos) throws SQLException {
    try (Connection c = autocommit()) {
      RetentionReport done = maintenance.slice(c, owned, sliceNanos);
      mayHaveMore |= done == null && maintenance.due();
      return done;
    }
  }

  /** After a failure nothing is known about in-flight rows: look for assigned rows again before new ones. */
  private void forgetProgress() {
    work.lock();
    try {
      owned.values().forEach(o -> o.checkAssigned = true);
      nextLeaseCheckNanos = 0;
    } finally {
      work.unlock();
    }
  }

  /** Publishes every row already assigned, releases the leases and leaves; true if nothing assigned was left. */
  private boolean drain(long deadlineNanos) {
    boolean drained = true;
    try (Connection c = autocommit()) {
      for (OwnedShard o : new ArrayList<>(owned.values())) {
        drained &= sendAssigned(c, o, deadlineNanos);
        if (owned.containsKey(o.id)) {
          leases.release(c, o.id, config.owner(), o.epoch);
          notify(() -> listener.leaseLost(o.id, o.epoch, true));
        }
      }
      owned.clear();
      ownedView = Set.of();
      leases.leave(c, config.owner());
    } catch (SQLException | RuntimeException e) {
      log.warn("relay {} could not drain cleanly ({}); the next owner publishes what is left after the lease TTL",
          config.owner(), e.toString());
      return false;
    }
    return drained;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Leases

  private void manageLeases(boolean force) throws SQLException {
    long now = System.nanoTime();
    if (!force && now < nextLeaseCheckNanos) {
      return;
    }
    nextLeaseCheckNanos = now + config.leaseTtl().toNanos() / 3;
    try (Connection c = autocommit()) {
      if (!rowsEnsured) {
        for (ShardId shard : allShards) {
          leases.ensureRow(c, shard, config.keyPrefix());
        }
        rowsEnsured = true;
      }
      int live = leases.heartbeat(c, config.owner(), config.leaseTtl());
      int target = (allShards.size() + live - 1) / live;

      for (OwnedShard o : new ArrayList<>(owned.values())) {
        LeaseQueries.Lease lease = leases.acquire(c, o.id, config.owner(), config.leaseTtl());
        if (lease == null || lease.epoch() != o.epoch) {
          lost(o, "another relay holds it now");
        } else {
          probe(c, o);
        }
      }
      // More relays than before: give back shards above the fair share, so others can take them now.
      List<OwnedShard> mine = new ArrayList<>(owned.values());
      for (int i = mine.size() - 1; i >= 0 && owned.size() > target; i--) {
        OwnedShard o = mine.get(i);
        // What cannot go now (a full list) keeps its IDs for the next owner: never hold the shard to wait for it.
        sendAssigned(c, o, System.nanoTime() + config.leaseTtl().toNanos() / 3);
        if (owned.remove(o.id) != null) {
          leases.release(c, o.id, config.owner(), o.epoch);
          log.info("relay {} released {} (epoch {}) to rebalance across {} relays", config.owner(), o.id, o.epoch,
              live);
          notify(() -> listener.leaseLost(o.id, o.epoch, true));
        }
      }
      // Start the search at an offset of our own, so that relays starting together do not chase the same shards.
      int offset = Math.floorMod(config.owner().hashCode(), Math.max(1, allShards.size()));
      for (int i = 0; i < allShards.size() && owned.size() < target; i++) {
        ShardId shard = allShards.get((offset + i) % allShards.size());
        if (owned.containsKey(shard)) {
          continue;
        }
        LeaseQueries.Lease lease = leases.acquire(c, shard, config.owner(), config.leaseTtl());
        if (lease != null) {
          takeOver(c, shard, lease);
        }
      }
      ownedView = Collections.unmodifiableSet(new TreeSet<>(owned.keySet()));
    }
  }

  private void takeOver(Connection c, ShardId shard, LeaseQueries.Lease lease) throws SQLException {
    String key = streams.key(config.keyPrefix(), shard);
    OwnedShard o = new OwnedShard(shard, key, streams.relayKey(key), lease.epoch(), lease.entriesAdded(),
        config.minBatchSize());
    // Never assign below what the stream already holds, whoever wrote it.
    StreamId top = streams.lastGeneratedId(o.streamKey, o.relayKey);
    if (top.compareTo(lease.lastAssigned()) > 0) {
      leases.raiseLastAssigned(c, shard, config.owner(), lease.epoch(), top);
    }
    owned.put(shard, o);
    log.info("relay {} took {} with epoch {} (last assigned {}, stream top {})", config.owner(), shard,
        lease.epoch(), lease.lastAssigned(), top);
    notify(() -> listener.leaseAcquired(shard, lease.epoch()));
  }

  private void lost(OwnedShard o, String why) {
    if (owned.remove(o.id) != null) {
      ownedView = Collections.unmodifiableSet(new TreeSet<>(owned.keySet()));
      log.warn("relay {} lost {} (epoch {}): {}; it stops writing that stream", config.owner(), o.id, o.epoch, why);
      notify(() -> listener.leaseLost(o.id, o.epoch, false));
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Publishing

  private RelayCycle publishOwned(boolean assignedOnly) throws SQLException {
    int assigned = 0;
    int published = 0;
    long republished = 0;
    mayHaveMore = false;
    if (owned.isEmpty()) {
      return new RelayCycle(0, 0, 0, 0);
    }
    try (Connection c = autocommit()) {
      long start = System.nanoTime();
      if (start >= nextPlanningCheckNanos) {
        outbox.refreshPlanning(c);
        nextPlanningCheckNanos = start + PLANNING_CHECK_INTERVAL_NANOS;
      }
      // New batches are written to Redis shard after shard and recorded in the database after the last write, so
      // that a shard's entries do not wait for the other shards' marks (each is a round trip and a plan). Until
      // its mark, a written batch stays the lease's pending batch: after a failure it is sent again and found.
      List<Written> unrecorded = new ArrayList<>();
      for (OwnedShard o : new ArrayList<>(owned.values())) {
        if (o.checkAssigned) {
          PublishOutcome p = publishAssigned(c, o);
          published += p.published;
          republished += p.republished;
          mayHaveMore |= p.published + p.republished > 0;
        }
        if (assignedOnly || !owned.containsKey(o.id) || o.checkAssigned) {
          continue;
        }
        // A bounded target (a list at capacity) takes no more than it has room for; the outbox holds the rest.
        long room = streams.room(o.streamKey, o.relayKey);
        if (room <= 0) {
          continue;
        }
        int limit = (int) Math.min(o.batchSize, room);
        // Always from the shard's lowest unassigned row: a row that commits late with a lower id must go before
        // anything its key commits later (starting past the last batch once lost exactly that order).
        OutboxQueries.Batch batch = outbox.assign(c, o.id, config.owner(), o.epoch, limit, config.maxBatchBytes());
        if (!batch.exists()) {
          lost(o, "its lease expired or was taken over before it could assign");
          continue;
        }
        assigned += batch.rows().size();
        // A full batch may have left rows behind; a short one took all there were when it ran, and rows committed
        // since then notify (or are found by the next idle poll): no second pass over every shard just to see.
        mayHaveMore |= batch.rows().size() >= limit;
        adaptBatchSize(o, batch.rows().size());
        if (!batch.rows().isEmpty()) {
          List<OutboxRow> rows = batch.rows();
          faults.beforeStreamWrite(o.id, rows.size());
          PublishResult result = streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, rows);
          if (result.lost()) {
            republished += streamLost(c, o, result.entriesAdded());
            mayHaveMore = true;
            continue;
          }
          faults.afterStreamWrite(o.id, rows.size());
          unrecorded.add(new Written(o, rows, result));
        }
      }
      for (Written w : unrecorded) {
        published += confirm(c, w.shard(), w.rows(), w.result(), true);
      }
    }
    maintenance.trimAfterPublish(owned.values());
    return new RelayCycle(owned.size(), assigned, published, republished);
  }

  private void adaptBatchSize(OwnedShard o, int rows) {
    if (rows >= o.batchSize) {
      o.batchSize = Math.min(config.maxBatchSize(), o.batchSize * 2);
    } else if (rows < o.batchSize / 4) {
      o.batchSize = Math.max(config.minBatchSize(), o.batchSize / 2);
    }
  }

  private record PublishOutcome(int published, long republished) {}

  /** A pending batch Redis accepted, not yet recorded in the database. */
  private record Written(OwnedShard shard, List<OutboxRow> rows, PublishResult result) {}

  /**
   * Sends what is assigned to the shard until nothing is left, until two calls in a row send nothing (the target is
   * full: what is left waits, with its IDs, for room), or until the deadline. Returns whether nothing is left.
   */
  private boolean sendAssigned(Connection c, OwnedShard o, long deadlineNanos) throws SQLException {
    o.checkAssigned = true;
    int idle = 0;
    while (o.checkAssigned && owned.containsKey(o.id) && System.nanoTime() < deadlineNanos && idle < 2) {
      PublishOutcome p = publishAssigned(c, o);
      idle = p.published() + p.republished() > 0 ? 0 : idle + 1;
    }
    return !o.checkAssigned;
  }

  /**
   * Sends a page of rows that keep their stream IDs after Redis lost data, else the pending batch recorded in the
   * lease (after a crash or a takeover); clears {@code checkAssigned} when there is neither.
   */
  private PublishOutcome publishAssigned(Connection c, OwnedShard o) throws SQLException {
    // Re-published rows first: their IDs are below any pending batch's, and Redis only accepts rising IDs.
    List<OutboxRow> rows = outbox.assigned(c, o.id, config.maxBatchSize());
    if (!rows.isEmpty()) {
      return send(c, o, rows, false);
    }
    OutboxQueries.Batch pending = outbox.pendingBatch(c, o.id);
    if (pending.exists()) {
      return send(c, o, pending.rows(), true);
    }
    o.checkAssigned = false;
    return new PublishOutcome(0, 0);
  }

  /**
   * Writes rows with their stream IDs to Redis and records the outcome. A pending batch ({@code endsBatch}) goes in
   * one call, as it was sized to, and recording it clears the batch; other rows go in calls of at most
   * {@code maxBatchBytes}.
   */
  private PublishOutcome send(Connection c, OwnedShard o, List<OutboxRow> rows, boolean endsBatch) throws SQLException {
    if (rows.isEmpty()) {
      if (endsBatch) {
        // Every row of the batch was published by someone else already: only forget the batch.
        if (outbox.markPublished(c, o.id, config.owner(), o.epoch, List.of(), o.confirmedAdded, true) < 0) {
          lost(o, "its lease was taken over");
        }
      }
      return new PublishOutcome(0, 0);
    }
    int published = 0;
    long republished = 0;
    int from = 0;
    while (from < rows.size() && owned.containsKey(o.id)) {
      int to = from;
      long bytes = 0;
      while (to < rows.size()
          && (endsBatch || to == from || bytes + rows.get(to).payload().length <= config.maxBatchBytes())) {
        bytes += rows.get(to).payload().length;
        to++;
      }
      List<OutboxRow> chunk = rows.subList(from, to);
      from = to;
      faults.beforeStreamWrite(o.id, chunk.size());
      PublishResult result = streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, chunk);
      if (result.lost()) {
        republished += streamLost(c, o, result.entriesAdded());
        break;
      }
      faults.afterStreamWrite(o.id, chunk.size());
      published += confirm(c, o, chunk, result, endsBatch);
      if (result.statuses().contains(EntryStatus.NOT_SENT)) {
        break; // the target is full: what follows must wait, in order, for the next attempt
      }
    }
    return new PublishOutcome(published, republished);
  }

  /** Marks what Redis holds as published, and re-queues what it refused without holding. */
  private int confirm(Connection c, OwnedShard o, List<OutboxRow> chunk, PublishResult result, boolean endsBatch)
      throws SQLException {
    List<OutboxRow> present = new ArrayList<>(chunk.size());
    List<OutboxRow> refused = new ArrayList<>();
    long oldestCreated = Long.MAX_VALUE;
    int alreadyPresent = 0;
    for (int i = 0; i < chunk.size(); i++) {
      OutboxRow row = chunk.get(i);
      EntryStatus status = result.statuses().get(i);
      if (status == EntryStatus.ALREADY_PRESENT) {
        alreadyPresent++;
      }
      if (status == EntryStatus.ADDED || status == EntryStatus.ALREADY_PRESENT) {
        present.add(row);
        oldestCreated = Math.min(oldestCreated, row.createdAt().toEpochMilli());
      } else if (status == EntryStatus.NOT_SENT) {
        // Not written (the list is full). A pending batch is cleared below, so these rows lose their IDs and are
        // assigned again (in id order, ahead of anything newer); re-published rows keep theirs and wait.
        continue;
      } else {
        refused.add(row);
      }
    }
    int marked = outbox.markPublished(c, o.id, config.owner(), o.epoch, present, result.entriesAdded(), endsBatch);
    if (marked < 0) {
      lost(o, "its lease was taken over while it published (the entries it added are in the stream and count)");
      return 0;
    }
    o.confirmedAdded = Math.max(o.confirmedAdded, result.entriesAdded());
    o.sinceTrim += marked;
    if (!refused.isEmpty()) {
      reassign(c, o, refused);
    }
    if (marked > 0) {
      long oldest = oldestCreated;
      notify(() -> listener.published(o.id, marked, oldest));
    }
    if (alreadyPresent > 0) {
      int resent = alreadyPresent;
      notify(() -> listener.alreadyPresent(o.id, resent));
    }
    return marked;
  }

  private void reassign(Connection c, OwnedShard o, List<OutboxRow> refused) throws SQLException {
    long[] ids = refused.stream().mapToLong(OutboxRow::id).toArray();
    StreamId top = streams.lastGeneratedId(o.streamKey, o.relayKey);
    String detail = "stream " + o.streamKey + " refused " + refused.size() + " entries (first outbox id "
        + ids[0] + ", stream id " + refused.get(0).streamId() + ") that it does not hold; its top is " + top
        + ": something else writes this stream. The rows get fresh IDs.";
    log.error("relay {}: {}", config.owner(), detail);
    leases.raiseLastAssigned(c, o.id, config.owner(), o.epoch, top);
    outbox.unassign(c, o.id, config.owner(), o.epoch, ids);
    notify(() -> listener.anomaly(o.id, refused.size(), detail));
  }

  private long streamLost(Connection c, OwnedShard o, long redisCount) throws SQLException {
    long republished = outbox.republish(c, o.id, config.owner(), o.epoch);
    log.error("relay {}: REDIS LOST STREAM {} (Redis counts {} entries added by relays, the database confirmed {};"
            + " restarted without persistence, evicted or deleted?). Publishing {} retained rows again with their"
            + " original IDs; consumers' inboxes absorb what they already processed.",
        config.owner(), o.streamKey, redisCount, o.confirmedAdded, republished);
    o.confirmedAdded = 0;
    o.checkAssigned = true;
    notify(() -> listener.streamLost(o.id, republished));
    return republished;
  }

  /** Checks an owned stream for data loss even when nothing is being published. */
  private void probe(Connection c, OwnedShard o) throws SQLException {
    if (o.confirmedAdded == 0) {
      return;
    }
    PublishResult result = streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, List.of());
    if (result.lost()) {
      streamLost(c, o, result.entriesAdded());
    }
  }

  // ---------------------------------------------------------------------------------------------------------------

  private Connection autocommit() throws SQLException {
    Connection c = dataSource.getConnection();
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true);
    }
    return c;
  }

  private void notify(Runnable callback) {
    try {
      callback.run();
    } catch (SimulatedCrash crash) {
      throw crash;
    } catch (RuntimeException e) {
      log.warn("relay listener failed: {}", e.toString());
    } catch (Throwable e) {
      log.error("relay listener failed", e);
    }
  }

  /** Sleeps after a failure; false when the relay is closing or the sleep was interrupted for the close. */
  private boolean pauseAfterFailure(long millis) {
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** What escapes the loop ends the thread: one line for a simulated crash, the whole trace for anything else. */
  private void uncaught(Thread t, Throwable e) {
    if (e instanceof SimulatedCrash) {
      log.warn("relay {}: thread {} stopped by a {}", config.owner(), t.getName(), e.getMessage());
    } else {
      log.error("relay {}: thread {} died", config.owner(), t.getName(), e);
    }
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
