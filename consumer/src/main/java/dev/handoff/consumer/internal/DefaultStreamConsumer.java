package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ConsumerStatus;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.InboxPurgeRefusedException;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.StartPosition;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.outbox.StreamFormat;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The default {@link StreamConsumer}: {@code workers} threads, each with its own consumer name
 * ({@code <consumerName>-<i>}) and its own blocking connection, each reading and settling one batch at a time,
 * so that in-flight work never exceeds {@code workers x batchSize}. One extra thread renews the leases of the
 * entries in flight.
 *
 * <p>A worker's step: replay its own pending entries (once, from {@code 0-0}, until the replay is empty); when a
 * reclaim pass is due, claim abandoned entries ({@code XAUTOCLAIM}, one step per stream, continuing the cursor of
 * the previous step until it comes back as {@code 0-0}); fill the rest of the batch with new entries
 * ({@code XREADGROUP >}, blocking only when nothing else was found); settle the batch in one transaction; XACK
 * what committed; push failed entries' idle time back by their backoff.
 *
 * <p>Thread-safe.
 */
public final class DefaultStreamConsumer extends AbstractConsumer implements StreamConsumer {

  private static final Logger log = LoggerFactory.getLogger(DefaultStreamConsumer.class);

  private final DataSource dataSource;
  private final RedisGroups redis;
  private final Backoff backoff;
  private final List<String> streamKeys;
  private final Map<String, Integer> shardOf = new HashMap<>();
  private final Worker[] workers;
  private final ReclaimScan reclaim;
  private final Object groupLock = new Object();
  private volatile boolean groupsReady;
  private boolean groupsCreatedOnce;
  private final ConsumerFaults faultHook;

  public DefaultStreamConsumer(ConsumerConfig config, DataSource dataSource, HostAndPort redisServer,
      JedisClientConfig redisConfig, ConsumerFaults faults) {
    super(config, dataSource, log, "consumer", "Consumer group",
        " (rolled back if not committed, left pending for another consumer to claim)");
    this.faultHook = faults;
    this.dataSource = dataSource;
    this.streamKeys = config.streamKeys();
    for (int i = 0; i < streamKeys.size(); i++) {
      shardOf.put(streamKeys.get(i), i);
    }
    this.redis = new RedisGroups(redisServer, redisConfig, config.group(), config.workers(), config.block(),
        config.redisPoolWait());
    this.backoff = new Backoff(config.initialBackoff(), config.maxBackoff());
    this.reclaim = new ReclaimScan(streamKeys, config.reclaimInterval().toMillis());
    this.workers = new Worker[config.workers()];
    for (int i = 0; i < workers.length; i++) {
      workers[i] = new Worker(i);
    }
    log.info("Consumer group '{}' on topic '{}' ({} shard(s)) configured: consumer {}, {} worker(s) x batch {},"
            + " block {}, minIdle {}, maxDeliveries {}, isolation {}",
        config.group(), config.topic().name(), streamKeys.size(), config.consumerName(), config.workers(),
        config.batchSize(), config.block(), config.minIdle(), config.maxDeliveries(), config.failureIsolation());
  }

  /** Test-only: renews the leases of the entries in flight now, as the lease keeper does on its schedule. */
  public void renewLeasesNow() {
    renewLeases();
  }

  @Override
  public ConsumerConfig config() {
    return config;
  }

  @Override
  public void start() {
    beginStart();
    try {
      ensureGroups();
    } catch (RuntimeException e) {
      log.warn("Consumer group '{}': could not prepare the groups at start ({}); the workers keep trying",
          config.group(), e.toString());
    }
    startLeaseKeeper();
    scheduleInboxPurge();
    for (Worker w : workers) {
      newWorkerThread(() -> runWorker(w), "handoff-consumer-" + config.group() + "-" + w.index).start();
    }
    log.info("Consumer group '{}' started: {} worker(s) as {}-*", config.group(), workers.length,
        config.consumerName());
  }

  @Override
  public PollResult pollOnce() {
    beginPoll();
    startLeaseKeeper();
    synchronized (workers[0]) {
      return workers[0].step(false);
    }
  }

  @Override
  public boolean retry(long deadLetterId) {
    InboundMessage m = processor.retry(deadLetterId);
    if (m != null) {
      emit(l -> l.handled(m));
      log.info("Consumer group '{}': dead letter {} (message {}) retried and processed", config.group(),
          deadLetterId, m.messageId());
    }
    return m != null;
  }

  @Override
  public int retryAll() {
    return processor.retryAll(this::retry);
  }

  @Override
  public ConsumerStatus status() {
    List<ConsumerStatus.StreamStatus> streams = new ArrayList<>();
    long now = config.clock().millis();
    for (String key : streamKeys) {
      if (!redis.exists(key)) {
        streams.add(new ConsumerStatus.StreamStatus(key, false, false, 0, null, null, null, 0, true, 0, null, null,
            Map.of(), new TreeMap<>()));
        continue;
      }
      String lastDelivered = redis.lastDeliveredId(key);
      long length = redis.length(key);
      String first = redis.firstEntryId(key);
      String last = redis.lastEntryId(key);
      if (lastDelivered == null) {
        // Without a group nothing was delivered: every retained entry is backlog.
        streams.add(new ConsumerStatus.StreamStatus(key, true, false, length, first, last, null, length, true, 0,
            null, null, Map.of(), new TreeMap<>()));
        continue;
      }
      long[] backlog = redis.countAfter(key, lastDelivered, config.statusScanLimit());
      RedisGroups.PendingSummary pending = redis.pendingSummary(key);
      Duration age = pending.minId() == null ? null
          : Duration.ofMillis(Math.max(0, now - Long.parseLong(pending.minId().substring(0,
              pending.minId().indexOf('-')))));
      streams.add(new ConsumerStatus.StreamStatus(key, true, true, length, first, last, lastDelivered, backlog[0],
          backlog[1] == 0, pending.total(), pending.minId(), age, pending.consumers(),
          pending.total() == 0 ? new TreeMap<>()
              : redis.deliveryHistogram(key, config.statusScanLimit())));
    }
    long dead;
    try (Connection c = dataSource.getConnection()) {
      dead = processor.deadLetters().countDead(c, config.group());
    } catch (SQLException e) {
      throw new ConsumerException("could not count the dead letters of consumer group '" + config.group() + "'", e);
    }
    return new ConsumerStatus(config.group(), config.topic().name(), streams, dead, duplicatesSkipped.get());
  }

  @Override
  protected String keyOfShard(int shard) {
    return StreamFormat.streamKey(config.keyPrefix(), config.topic().name(), shard);
  }

  /** The oldest entry the topic's streams retain, or just above the top of an empty one. */
  @Override
  protected long[] redisFloor() {
    long[] floor = {Long.MAX_VALUE, Long.MAX_VALUE};
    for (String key : streamKeys) {
      if (!redis.exists(key)) {
        throw new InboxPurgeRefusedException("inbox purge of consumer group '" + config.group()
            + "' refused: stream '" + key + "' does not exist, so Redis may have lost it and the relay may"
            + " publish its messages again; their markers must stay", -1);
      }
      String first = redis.firstEntryId(key);
      long[] candidate;
      if (first != null) {
        candidate = parse(first);
      } else {
        long[] top = parse(redis.lastGeneratedId(key));
        candidate = new long[] {top[0], top[1] + 1};
      }
      if (compare(candidate, floor) < 0) {
        floor = candidate;
      }
    }
    return floor;
  }

  @Override
  public PollResult replayRetained() {
    PollResult total = PollResult.EMPTY;
    for (String key : streamKeys) {
      String after = "0-0";
      while (true) {
        List<RedisGroups.RawEntry> page = redis.range(key, after, config.batchSize());
        if (page.isEmpty()) {
          break;
        }
        List<Delivery> batch = new ArrayList<>(page.size());
        for (RedisGroups.RawEntry e : page) {
          batch.add(Delivery.of(key, shardOf.get(key), e.id(), 0, e.fields()));
        }
        total = total.plus(settleReplay(batch));
        after = page.get(page.size() - 1).id();
      }
    }
    return total;
  }

  @Override
  public PollResult replay(List<InboundMessage> messages) {
    PollResult total = PollResult.EMPTY;
    for (int i = 0; i < messages.size(); i += config.batchSize()) {
      List<Delivery> batch = new ArrayList<>();
      for (InboundMessage m : messages.subList(i, Math.min(messages.size(), i + config.batchSize()))) {
        batch.add(Delivery.of(m, shardOf.getOrDefault(m.streamKey(), -1)));
      }
      total = total.plus(settleReplay(batch));
    }
    return total;
  }

  private PollResult settleReplay(List<Delivery> batch) {
    BatchProcessor.Settled s = processor.settle(batch, BatchProcessor.Mode.REPLAY, ConsumerFaults.NONE);
    emitHandled(s);
    if (s.databaseError != null) {
      throw new ConsumerException("replay for consumer group '" + config.group() + "' failed in the database",
          s.databaseError);
    }
    return new PollResult(batch.size(), s.handled.size(), s.duplicates.size(), s.failed.size(), 0, 0, 0);
  }

  @Override
  public void close() {
    close(DEFAULT_CLOSE_DEADLINE);
  }

  @Override
  public boolean close(Duration deadline) {
    return closeWithin(deadline);
  }

  @Override
  protected void afterWorkersStopped(boolean used, boolean clean) {
    if (clean && used) {
      // Consumer names are per process: remove ours when they hold nothing, so that names do not pile up in the
      // group. A name with pending entries stays, or those entries could never be claimed (DELCONSUMER drops them).
      for (Worker w : workers) {
        for (String key : streamKeys) {
          try {
            redis.deleteConsumerIfIdle(key, w.name);
          } catch (RuntimeException e) {
            log.debug("could not remove consumer {} from {}", w.name, key, e);
          }
        }
      }
    }
    redis.close();
  }

  private void ensureGroups() {
    if (groupsReady) {
      return;
    }
    synchronized (groupLock) {
      if (groupsReady) {
        return;
      }
      // Only the very first creation may honour NEW_ENTRIES_ONLY: a group that vanished later is recreated from
      // the beginning, or whatever the relay re-publishes would be skipped.
      boolean recreating = groupsCreatedOnce;
      boolean fromBeginning = recreating || config.startPosition() == StartPosition.BEGINNING;
      for (String key : streamKeys) {
        if (redis.ensureGroup(key, fromBeginning)) {
          if (recreating) {
            log.warn("Consumer group '{}' was missing on {} (Redis lost its data?) and was recreated from the"
                + " beginning; the inbox absorbs what was processed before", config.group(), key);
            emit(l -> l.groupRecreated(key));
          } else {
            log.info("Consumer group '{}' created on {} at {}", config.group(), key,
                fromBeginning ? "the beginning (0)" : "the end ($)");
          }
        }
      }
      groupsCreatedOnce = true;
      groupsReady = true;
    }
  }

  private void groupsMissing() {
    synchronized (groupLock) {
      groupsReady = false;
      groupsCreatedOnce = true;
    }
    reclaim.reset();
  }

  private synchronized void startLeaseKeeper() {
    if (housekeepingStarted()) {
      return;
    }
    ScheduledExecutorService leaseKeeper = newHousekeeping("handoff-consumer-" + config.group() + "-lease");
    long every = config.leaseRenewInterval().toMillis();
    leaseKeeper.scheduleWithFixedDelay(guarded("lease renewal", this::renewLeases), every, every,
        TimeUnit.MILLISECONDS);
  }

  private void renewLeases() {
    for (Worker w : workers) {
      for (Map.Entry<String, Set<String>> e : w.inFlight.entrySet()) {
        List<String> ids = new ArrayList<>(e.getValue());
        if (ids.isEmpty()) {
          continue;
        }
        try {
          for (String lostId : redis.renew(e.getKey(), w.name, ids)) {
            if (e.getValue().contains(lostId)) {
              log.warn("Consumer {}: entry {} of {} was claimed by another consumer while still being handled;"
                  + " the inbox marker decides which commit counts", w.name, lostId, e.getKey());
              emit(l -> l.leaseLost(e.getKey(), lostId));
            }
          }
        } catch (RuntimeException ex) {
          log.debug("lease renewal for {} on {} failed", w.name, e.getKey(), ex);
        }
      }
    }
  }

  private static long[] parse(String id) {
    int dash = id.indexOf('-');
    return new long[] {Long.parseLong(id.substring(0, dash)), Long.parseLong(id.substring(dash + 1))};
  }

  private static int compare(long[] a, long[] b) {
    int c = Long.compare(a[0], b[0]);
    return c != 0 ? c : Long.compare(a[1], b[1]);
  }

  /** One worker: a consumer name, its replay state, and the entries it holds right now. */
  private final class Worker implements WorkerLoop {
    final int index;
    final String name;
    final Map<String, String> ownCursor = new LinkedHashMap<>();
    boolean ownPendingDone;
    int rotation;
    final Map<String, Set<String>> inFlight = new ConcurrentHashMap<>();
    Throwable lastDatabaseError;

    Worker(int index) {
      this.index = index;
      this.name = config.workerName(index);
      resetOwnReplay();
    }

    void resetOwnReplay() {
      ownCursor.clear();
      for (String key : streamKeys) {
        ownCursor.put(key, "0-0");
      }
      ownPendingDone = false;
    }

    @Override
    public Throwable blockingStep() {
      step(true);
      return lastDatabaseError;
    }

    @Override
    public void databaseFailed(Throwable error) {
      log.warn("Consumer {}: database failure, unsettled entries stay pending: {}", name, error.toString());
    }

    @Override
    public void redisFailed(JedisException e) {
      log.warn("Consumer {}: Redis unavailable ({}); retrying", name, e.toString());
    }

    @Override
    public boolean failed(Throwable e) {
      if (e instanceof RedisGroups.GroupMissingException) {
        groupsMissing();
        resetOwnReplay();
        log.warn("Consumer {}: {}; recreating the group from the beginning", name, e.getMessage());
      } else {
        // What the failed step held is unknown: read this worker's pending entries again, as after a restart.
        resetOwnReplay();
        log.error("Consumer {}: unexpected failure; retrying", name, e);
      }
      return true;
    }

    PollResult step(boolean blocking) {
      try {
        ensureGroups();
        List<Delivery> batch = new ArrayList<>();
        if (!ownPendingDone) {
          replayOwn(batch);
          if (!batch.isEmpty()) {
            return settle(batch, 0);
          }
        }
        int reclaimed = reclaimStep(batch, !blocking);
        int free = config.batchSize() - batch.size();
        if (free > 0 && (!blocking || running())) {
          readNew(batch, free, blocking && batch.isEmpty());
        }
        return settle(batch, reclaimed);
      } catch (RedisGroups.GroupMissingException e) {
        if (!blocking) {
          // pollOnce: heal at once so the next call finds the group again
          groupsMissing();
          resetOwnReplay();
          log.warn("Consumer {}: {}; recreating the group from the beginning", name, e.getMessage());
          return PollResult.EMPTY;
        }
        throw e;
      }
    }

    private void replayOwn(List<Delivery> batch) {
      for (String key : new ArrayList<>(ownCursor.keySet())) {
        int free = config.batchSize() - batch.size();
        if (free <= 0) {
          return;
        }
        List<RedisGroups.RawEntry> page = redis.readOwnPending(name, key, ownCursor.get(key), free);
        if (page.isEmpty()) {
          ownCursor.remove(key);
          continue;
        }
        ownCursor.put(key, page.get(page.size() - 1).id());
        addWithCounts(batch, key, page);
      }
      if (ownCursor.isEmpty()) {
        ownPendingDone = true;
      }
    }

    private int reclaimStep(List<Delivery> batch, boolean force) {
      long now = config.clock().millis();
      if (!reclaim.tryBegin(now, force)) {
        return 0;
      }
      int claimedTotal = 0;
      try {
        for (String key : reclaim.remaining()) {
          int free = config.batchSize() - batch.size();
          if (free <= 0) {
            break;
          }
          RedisGroups.AutoClaim step =
              redis.autoClaim(key, name, config.minIdle().toMillis(), reclaim.cursor(key), free);
          reclaim.advance(key, step.nextCursor());
          int before = batch.size();
          addWithCounts(batch, key, step.claimed());
          for (String deleted : step.deletedIds()) {
            // XAUTOCLAIM already dropped these from the PEL: their payload is gone.
            batch.add(Delivery.of(key, shardOf.get(key), deleted, 0, null));
          }
          int n = batch.size() - before;
          if (n > 0) {
            claimedTotal += n;
            int count = n;
            emit(l -> l.reclaimed(key, count));
            log.debug("Consumer {} claimed {} abandoned entr(ies) of {}", name, n, key);
          }
        }
      } finally {
        reclaim.end(config.clock().millis());
      }
      return claimedTotal;
    }

    private void readNew(List<Delivery> batch, int free, boolean block) {
      int streams = Math.min(streamKeys.size(), free);
      List<String> keys = new ArrayList<>(streams);
      for (int j = 0; j < streams; j++) {
        keys.add(streamKeys.get((rotation + j) % streamKeys.size()));
      }
      rotation = (rotation + streams) % streamKeys.size();
      // COUNT applies per stream: split the free capacity so the whole reply fits in it.
      for (RedisGroups.RawEntry e : redis.readNew(name, keys, free / streams, block ? config.block() : null)) {
        batch.add(Delivery.of(e.streamKey(), shardOf.get(e.streamKey()), e.id(), 1, e.fields()));
      }
    }

    private void addWithCounts(List<Delivery> batch, String key, List<RedisGroups.RawEntry> entries) {
      if (entries.isEmpty()) {
        return;
      }
      List<String> ids = new ArrayList<>(entries.size());
      for (RedisGroups.RawEntry e : entries) {
        ids.add(e.id());
      }
      long[] counts = redis.deliveryCounts(key, name, ids);
      for (int i = 0; i < entries.size(); i++) {
        if (counts[i] < 0) {
          continue; // claimed away by another consumer in the meantime
        }
        batch.add(Delivery.of(key, shardOf.get(key), ids.get(i), counts[i], entries.get(i).fields()));
      }
    }

    private PollResult settle(List<Delivery> batch, int reclaimed) {
      lastDatabaseError = null;
      if (batch.isEmpty()) {
        return PollResult.EMPTY;
      }
      for (Delivery d : batch) {
        inFlight.computeIfAbsent(d.streamKey, k -> ConcurrentHashMap.newKeySet()).add(d.id);
      }
      try {
        long started = System.nanoTime();
        BatchProcessor.Settled s = processor.settle(batch, BatchProcessor.Mode.DELIVERY, faultHook,
            () -> abandoning());
        if (s.committed() > 0) {
          faultHook.at(ConsumerFaults.Point.AFTER_COMMIT);
        }
        Map<String, List<String>> acks = new HashMap<>();
        Consumer<Delivery> ack = d -> acks.computeIfAbsent(d.streamKey, k -> new ArrayList<>()).add(d.id);
        s.handled.forEach(ack);
        s.duplicates.forEach(ack);
        s.dead.forEach(x -> ack.accept(x.delivery()));
        s.lost.forEach(ack);
        // Stop renewing what is about to be acknowledged: a renewal that ran after the XACK would find the entries
        // gone from the pending list and report them as taken by another consumer.
        acks.forEach((key, ids) -> {
          Set<String> held = inFlight.get(key);
          if (held != null) {
            ids.forEach(held::remove);
          }
        });
        redis.ackAll(acks);
        Map<String, Map<String, Long>> defer = new HashMap<>();
        Map<Delivery, Duration> backoffs = new HashMap<>();
        for (BatchProcessor.Failure f : s.failed) {
          Duration wait = backoff.after(Math.max(1, f.delivery().deliveries));
          backoffs.put(f.delivery(), wait);
          long idle = Math.max(0, config.minIdle().toMillis() - wait.toMillis());
          defer.computeIfAbsent(f.delivery().streamKey, k -> new LinkedHashMap<>()).put(f.delivery().id, idle);
        }
        defer.forEach((key, ids) -> redis.defer(key, name, ids));
        report(s, backoffs, System.nanoTime() - started);
        lastDatabaseError = s.databaseError;
        return new PollResult(batch.size(), s.handled.size(), s.duplicates.size(),
            s.failed.size() + s.abandoned.size(), s.dead.size(), s.lost.size(), reclaimed);
      } finally {
        inFlight.clear();
      }
    }

    private void report(BatchProcessor.Settled s, Map<Delivery, Duration> backoffs, long nanos) {
      emitHandled(s);
      for (BatchProcessor.Failure f : s.failed) {
        Delivery d = f.delivery();
        log.info("Consumer {}: message {} (entry {} of {}, delivery {}) failed, retry in {}: {}", name,
            d.messageId(), d.id, d.streamKey, d.deliveries, backoffs.get(d), f.error().toString());
        if (d.message != null) {
          emit(l -> l.failed(d.message, f.error(), backoffs.get(d)));
        }
      }
      for (BatchProcessor.Dead x : s.dead) {
        Delivery d = x.delivery();
        String firstLine = x.error().lines().findFirst().orElse("");
        log.warn("Consumer {}: entry {} of {} (message {}) dead-lettered after {} deliveries: {}", name, d.id,
            d.streamKey, d.messageId(), d.deliveries, firstLine);
        emit(l -> l.deadLettered(d.streamKey, d.id, d.messageId(), x.error()));
      }
      for (Delivery d : s.lost) {
        log.warn("Consumer {}: pending entry {} of {} has no payload any more (trimmed or deleted); recorded as"
            + " lost in dead_letter and acknowledged", name, d.id, d.streamKey);
        emit(l -> l.lost(d.streamKey, d.id));
      }
      emitCommitted(s, nanos);
    }
  }
}
