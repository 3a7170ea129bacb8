package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.InboxPurgeRefusedException;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.ListFormat;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * The default {@link ListConsumer}: {@code workers} threads, each with a processing list per shard and its own
 * blocking connection, settling one batch at a time through the same {@link BatchSettler} as the stream
 * consumer; plus one housekeeping thread that renews the heartbeats and runs the reaper.
 *
 * <p>Each worker is a {@link ListWorker}; what they share with the stream consumer's (the batch transaction, the
 * acknowledgement after the commit, the outcome reporting) is {@link DeliveryWorker}'s.
 *
 * <p>Thread-safe.
 */
public final class DefaultListConsumer extends AbstractConsumer implements ListConsumer {

  private static final Logger log = LoggerFactory.getLogger(DefaultListConsumer.class);

  private final DataSource dataSource;
  private final ListQueues redis;
  private final OutboxQueries outbox;
  private final List<String> listKeys = new ArrayList<>();
  private final ListWorker[] workers;
  private final ConsumerConfig.ListSettings listSettings;

  /**
   * @param config settings with {@link ConsumerConfig.ListSettings}
   * @param collaborators the handler, listener, clock and fault hooks
   * @throws IllegalStateException if {@code config} holds a stream consumer's settings
   */
  public DefaultListConsumer(ConsumerConfig config, Collaborators collaborators, DataSource dataSource,
      SettleOptions settling, HostAndPort redisServer, Set<HostAndPort> redisCluster, JedisClientConfig redisConfig) {
    super(config, collaborators, dataSource, settling, log, new Words("list consumer", "List consumer of group",
        "List consumer", "element", ""), config.listSettings().heartbeatInterval());
    this.listSettings = config.listSettings();
    this.dataSource = dataSource;
    for (int shard = 0; shard < config.topic().shards(); shard++) {
      listKeys.add(ListFormat.listKey(config.keyPrefix(), config.topic().name(), shard));
    }
    ConsumerConfig.Reading reading = config.reading();
    this.redis = new ListQueues(redisServer, redisCluster, redisConfig, reading.workers(), reading.block(),
        reading.redisPoolWait());
    this.outbox = new OutboxQueries(config.schema());
    DeliveryWorker.Shared shared = sharedByWorkers(redis::dropIdleConnections);
    this.workers = new ListWorker[reading.workers()];
    for (int i = 0; i < workers.length; i++) {
      workers[i] = new ListWorker(shared, i, redis, listKeys);
    }
    log.info("List consumer of group '{}' on topic '{}' ({} shard(s)) configured: consumer {}, {} worker(s) x batch"
            + " {}, block {}, heartbeat ttl {} every {}, reaper every {}, maxDeliveries {}",
        config.group(), config.topic().name(), listKeys.size(), config.consumerName(), reading.workers(),
        reading.batchSize(), reading.block(), listSettings.heartbeatTtl(), listSettings.heartbeatInterval(),
        listSettings.reapInterval(), config.retries().maxDeliveries());
  }

  @Override
  public void start() {
    beginStart();
    try {
      startHousekeeping(true);
      scheduleUpkeep();
      for (ListWorker w : workers) {
        startWorker(w, "handoff-list-consumer-" + config.group() + "-" + w.index);
      }
    } catch (RuntimeException e) {
      throw startFailed(e);
    }
    log.info("List consumer of group '{}' started: {} worker(s) as {}-*", config.group(), workers.length,
        config.consumerName());
  }

  @Override
  protected String shardKey(int shard) {
    return ListFormat.listKey(config.keyPrefix(), config.topic().name(), shard);
  }

  @Override
  protected boolean keyExists(String key) {
    return redis.exists(key);
  }

  @Override
  public PollResult pollOnce() {
    beginPoll();
    startHousekeeping(false);
    reap();
    synchronized (workers[0]) {
      return workers[0].step(false);
    }
  }

  /** Heartbeats first (so nothing is ever taken into an unregistered processing list), then the schedule. */
  private synchronized void startHousekeeping(boolean withReaper) {
    if (housekeepingStarted()) {
      return;
    }
    beat();
    ScheduledExecutorService housekeeping =
        newHousekeeping("handoff-list-consumer-" + config.group() + "-housekeeping");
    long every = listSettings.heartbeatInterval().toMillis();
    housekeeping.scheduleWithFixedDelay(guarded("the heartbeat", this::beatQuietly), every, every,
        TimeUnit.MILLISECONDS);
    if (withReaper) {
      long reapEvery = listSettings.reapInterval().toMillis();
      housekeeping.scheduleWithFixedDelay(guarded("the reaper", this::reapQuietly), reapEvery, reapEvery,
          TimeUnit.MILLISECONDS);
    }
  }

  private void beat() {
    for (ListWorker w : workers) {
      Thread t = w.thread;
      if (t != null && !t.isAlive()) {
        // A worker thread that died keeps nothing alive: without its heartbeat the reaper returns what its
        // processing lists hold, as it would for a dead process.
        if (!w.reportedDead) {
          w.reportedDead = true;
          log.error("List consumer {}: worker {} died; its processing lists are left for the reaper after {}",
              config.consumerName(), w.name, listSettings.heartbeatTtl());
        }
        continue;
      }
      for (String list : listKeys) {
        redis.heartbeat(list, w.processing.get(list), listSettings.heartbeatTtl());
      }
    }
  }

  private void beatQuietly() {
    try {
      collaborators.faults().at(ConsumerFaults.Point.BEFORE_HEARTBEAT);
      beat();
    } catch (RuntimeException e) {
      log.warn("List consumer {}: heartbeat failed ({}); the reaper may return this consumer's elements if it"
          + " stays silent for {}", config.consumerName(), e.toString(), listSettings.heartbeatTtl());
    }
  }

  /** One reaper pass over every shard. */
  private long reap() {
    long total = 0;
    for (String list : listKeys) {
      ListQueues.Reaped r = redis.reap(list, listSettings.heartbeatTtl().multipliedBy(10), null);
      if (r.returned() > 0) {
        total += r.returned();
        log.warn("List consumer {}: returned {} element(s) of {} dead consumer(s) to the head of {}",
            config.consumerName(), r.returned(), r.consumers(), list);
        reporter().emit(l -> l.reclaimed(list, (int) r.returned()));
      }
    }
    return total;
  }

  private void reapQuietly() {
    try {
      collaborators.faults().at(ConsumerFaults.Point.BEFORE_REAP);
      reap();
    } catch (RuntimeException e) {
      log.debug("reaper pass failed", e);
    }
  }

  @Override
  protected String keyOfShard(int shard) {
    return ListFormat.listKey(config.keyPrefix(), config.topic().name(), shard);
  }

  /** The lowest ID the topic's lists and processing lists hold. */
  @Override
  protected long[] redisFloor() {
    long[] floor = {Long.MAX_VALUE, Long.MAX_VALUE};
    for (String list : listKeys) {
      long[] held = redis.lowestHeld(list);
      if (held == null) {
        throw new InboxPurgeRefusedException("inbox purge of consumer group '" + config.group()
            + "' refused: the relay's bookkeeping for list '" + list + "' does not exist, so Redis may have lost"
            + " the list and the relay may push its messages again; their markers must stay", -1);
      }
      if (held[0] < floor[0] || (held[0] == floor[0] && held[1] < floor[1])) {
        floor = held;
      }
    }
    return floor;
  }

  @Override
  public ListStatus status() {
    long now = collaborators.clock().millis();
    List<ListStatus.ShardStatus> shards = new ArrayList<>();
    long dead;
    try (Connection c = dataSource.getConnection()) {
      dead = deadLetters.countDead(c);
      for (int shard = 0; shard < listKeys.size(); shard++) {
        shards.add(shardStatus(c, shard, now));
      }
    } catch (SQLException e) {
      throw new ConsumerException("could not read the status of consumer group '" + config.group() + "'", e);
    }
    return new ListStatus(config.group(), config.topic().name(), shards, dead, reporter().duplicatesSkipped(),
        pausedOf(workers));
  }

  private ListStatus.ShardStatus shardStatus(Connection c, int shard, long now) {
    String list = listKeys.get(shard);
    Map<String, Long> processing = new LinkedHashMap<>();
    Map<String, Boolean> alive = new LinkedHashMap<>();
    String oldest = null;
    // One snapshot of the list and its processing lists, so that an element in motion is never missed by both.
    ListQueues.Snapshot snapshot = redis.snapshot(list);
    for (ListQueues.Holder h : snapshot.holders()) {
      String name = ListFormat.consumerOf(h.processingKey());
      processing.put(name, h.length());
      alive.put(name, h.alive());
      if (h.oldestId() != null && (oldest == null || compare(h.oldestId(), oldest) < 0)) {
        oldest = h.oldestId();
      }
    }
    Duration age = oldest == null ? null
        : Duration.ofMillis(Math.max(0, now - Long.parseLong(oldest.substring(0, oldest.indexOf('-')))));
    Map<String, String> relay = redis.relayState(list);
    long backlog;
    try {
      backlog = outbox.unpublished(c, config.topic().name(), shard);
    } catch (SQLException e) {
      backlog = -1; // the consumer does not share the producer's database
    }
    return new ListStatus.ShardStatus(list, relay.get("capacity") == null ? -1 : Long.parseLong(relay.get("capacity")),
        snapshot.waiting(), processing, alive, oldest, age, relay.get("last"), backlog);
  }

  @Override
  protected void afterWorkersStopped(boolean used, boolean clean) {
    try {
      if (used && mayGiveBack()) {
        giveBack();
      }
    } finally {
      redis.close();
    }
  }

  /**
   * Whether the fault hook lets close give back: one that throws at {@link ConsumerFaults.Point#BEFORE_GIVE_BACK}
   * stands for a process that died while closing, whose elements only a reaper returns.
   */
  private boolean mayGiveBack() {
    try {
      collaborators.faults().at(ConsumerFaults.Point.BEFORE_GIVE_BACK);
      return true;
    } catch (RuntimeException e) {
      log.warn("List consumer {}: gives nothing back ({}); the reaper of another consumer will return its elements"
          + " after {}", config.consumerName(), e.toString(), listSettings.heartbeatTtl());
      return false;
    }
  }

  /**
   * Whatever this consumer still holds (abandoned, or waiting for a retry) goes back to the head now, rather than
   * after the heartbeat TTL; the registrations and heartbeats go too.
   */
  private void giveBack() {
    for (ListWorker w : workers) {
      for (String list : listKeys) {
        try {
          long returned =
              redis.reap(list, listSettings.heartbeatTtl().multipliedBy(10), w.processing.get(list)).returned();
          if (returned > 0) {
            log.info("List consumer {}: returned {} unfinished element(s) to the head of {}", w.name, returned, list);
          }
        } catch (RuntimeException e) {
          log.warn("List consumer {}: could not return its elements of {} ({}); the reaper of another consumer"
              + " will after {}", w.name, list, e.toString(), listSettings.heartbeatTtl());
        }
      }
    }
  }

  private static int compare(String a, String b) {
    int da = a.indexOf('-');
    int db = b.indexOf('-');
    int c = Long.compare(Long.parseLong(a.substring(0, da)), Long.parseLong(b.substring(0, db)));
    return c != 0 ? c : Long.compare(Long.parseLong(a.substring(da + 1)), Long.parseLong(b.substring(db + 1)));
  }
}
