package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.OrderedShard;
import dev.handoff.core.Health;
import dev.handoff.core.StreamFormat;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * The default {@link StreamConsumer}: {@code workers} threads, each with its own consumer name
 * ({@code <consumerName>-<i>}) and its own blocking connection, each reading and settling one batch at a time,
 * so that in-flight work never exceeds {@code workers x batchSize}. One extra thread renews the leases of the
 * entries in flight.
 *
 * <p>Each worker is a {@link StreamWorker}; what they share (the batch transaction, the acknowledgement after the
 * commit, the outcome reporting) is {@link DeliveryWorker}'s.
 *
 * <p>Thread-safe.
 */
public final class DefaultStreamConsumer extends AbstractConsumer implements StreamConsumer {

  private static final Logger log = LoggerFactory.getLogger(DefaultStreamConsumer.class);

  private final DataSource dataSource;
  private final RedisGroups redis;
  private final StreamGroups groups;
  private final StreamInspector inspector;
  private final List<String> streamKeys;
  private final DeliveryWorker[] workers;
  private final ConsumerConfig.StreamSettings streamSettings;
  /** The shards this consumer holds when the group is ordered per shard; null when it is not. */
  private final ShardOwnership ownership;
  private final ShardLeases shardLeases;

  /**
   * @param config settings with {@link ConsumerConfig.StreamSettings}
   * @param collaborators the handler, listener, clock and fault hooks
   * @throws IllegalStateException if {@code config} holds a list consumer's settings
   */
  public DefaultStreamConsumer(ConsumerConfig config, Collaborators collaborators, DataSource dataSource,
      SettleOptions settling, HostAndPort redisServer, Set<HostAndPort> redisCluster, JedisClientConfig redisConfig) {
    super(config, collaborators, dataSource, settling, log, new Words("consumer", "Consumer group", "Consumer",
        "entry", " (rolled back if not committed, left pending for another consumer to claim)"),
        config.streamSettings().leaseRenewInterval());
    this.streamSettings = config.streamSettings();
    this.dataSource = dataSource;
    ConsumerConfig.Reading reading = config.reading();
    this.redis = new RedisGroups(redisServer, redisCluster, redisConfig, config.group(), reading.workers(),
        reading.block(), reading.redisPoolWait());
    this.groups = new StreamGroups(config, redis, reporter(), log);
    this.streamKeys = groups.keys();
    this.inspector = new StreamInspector(redis, streamKeys, config.group());
    DeliveryWorker.Shared shared = sharedByWorkers(redis::dropIdleConnections);
    this.ownership = streamSettings.ordering().ordered() ? new ShardOwnership(config, dataSource, log) : null;
    this.shardLeases = ownership != null ? ownership.leases()
        : new ShardLeases(config.schema(), config.group(), config.topic().name());
    if (ownership != null) {
      upkeep.routeRetries(ownership::lanes);
    }
    this.workers = new DeliveryWorker[reading.workers()];
    for (int i = 0; i < workers.length; i++) {
      workers[i] = ownership != null ? new OrderedWorker(shared, i, redis, groups, ownership, dataSource)
          : new StreamWorker(shared, i, redis, groups);
    }
    log.info("Consumer group '{}' on topic '{}' ({} shard(s)) configured: consumer {}, {} worker(s) x batch {},"
            + " block {}, minIdle {}, maxDeliveries {}, isolation {}{}",
        config.group(), config.topic().name(), streamKeys.size(), config.consumerName(), reading.workers(),
        reading.batchSize(), reading.block(), streamSettings.minIdle(), config.retries().maxDeliveries(),
        config.retries().failureIsolation(), ownership == null ? "" : ", ordered per shard (lease ttl "
            + streamSettings.ordering().leaseTtl() + ", when exhausted " + streamSettings.ordering().whenExhausted()
            + ")");
  }

  @Override
  void renewHeldWork() {
    if (ownership != null) {
      maintainShards();
    } else {
      renewLeases();
    }
  }

  @Override
  public void start() {
    requireSameOrdering();
    beginStart();
    try {
      groups.ensure();
    } catch (RuntimeException e) {
      log.warn("Consumer group '{}': could not prepare the groups at start ({}); the workers keep trying",
          config.group(), e.toString());
    }
    startLeaseKeeper();
    scheduleUpkeep();
    for (DeliveryWorker w : workers) {
      startWorker(w, "handoff-consumer-" + config.group() + "-" + w.index);
    }
    log.info("Consumer group '{}' started: {} worker(s) as {}-*", config.group(), workers.length,
        config.consumerName());
  }

  @Override
  protected String shardKey(int shard) {
    return StreamFormat.streamKey(config.keyPrefix(), config.topic().name(), shard);
  }

  @Override
  protected boolean keyExists(String key) {
    return redis.exists(key);
  }

  @Override
  public PollResult pollOnce() {
    requireSameOrdering();
    beginPoll();
    startLeaseKeeper();
    if (ownership == null) {
      synchronized (workers[0]) {
        return workers[0].step(false);
      }
    }
    // Ordered: each worker works on its own share of the shards; one step of each covers them all.
    PollResult total = PollResult.EMPTY;
    for (DeliveryWorker w : workers) {
      synchronized (w) {
        total = total.plus(w.step(false));
      }
    }
    return total;
  }

  @Override
  public ConsumerStatus status() {
    List<ConsumerStatus.StreamStatus> streams = inspector.streams(collaborators.clock().millis(),
        streamSettings.statusScanLimit());
    long dead;
    List<OrderedShard> shards;
    try (Connection c = dataSource.getConnection()) {
      dead = deadLetters.countDead(c);
      // Read for any group, so that an operator's status shows an ordered group's shards from a plain probe.
      shards = shardLeases.status(c);
    } catch (SQLException e) {
      throw new ConsumerException("could not read the dead letters and shard leases of consumer group '"
          + config.group() + "'", e);
    }
    return new ConsumerStatus(config.group(), config.topic().name(), streams, dead, reporter().duplicatesSkipped(),
        pausedOf(workers), shards);
  }

  @Override
  protected String keyOfShard(int shard) {
    return StreamFormat.streamKey(config.keyPrefix(), config.topic().name(), shard);
  }

  /** The oldest entry the topic's streams retain, or just above the top of an empty one. */
  @Override
  protected long[] redisFloor() {
    return inspector.floor();
  }

  @Override
  public PollResult replayRetained() {
    PollResult total = PollResult.EMPTY;
    for (String key : streamKeys) {
      String after = "0-0";
      while (true) {
        List<RedisGroups.RawEntry> page = redis.range(key, after, config.reading().batchSize());
        if (page.isEmpty()) {
          break;
        }
        List<Delivery> batch = new ArrayList<>(page.size());
        for (RedisGroups.RawEntry e : page) {
          batch.add(Delivery.of(key, groups.shardOf(key), e.id(), 0, e.fields()));
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
    for (int i = 0; i < messages.size(); i += config.reading().batchSize()) {
      List<Delivery> batch = new ArrayList<>();
      for (InboundMessage m : messages.subList(i, Math.min(messages.size(), i + config.reading().batchSize()))) {
        batch.add(Delivery.of(m, groups.shardOf(m.delivery().streamKey())));
      }
      total = total.plus(settleReplay(batch));
    }
    return total;
  }

  private PollResult settleReplay(List<Delivery> batch) {
    Settled s = settler.settle(batch, BatchSettler.Mode.REPLAY, ConsumerFaults.NONE);
    reporter().handled(s);
    if (s.databaseError != null) {
      throw new ConsumerException("replay for consumer group '" + config.group() + "' failed in the database",
          s.databaseError);
    }
    return new PollResult(batch.size(), s.handled.size(), s.duplicates.size(), s.failed.size(), 0, 0, 0);
  }

  @Override
  protected void afterWorkersStopped(boolean used, boolean clean) {
    if (clean && used && ownership != null) {
      try {
        ownership.releaseAll(); // the others take the shards at once, not after the lease TTL
      } catch (SQLException | RuntimeException e) {
        log.warn("Consumer group '{}': could not give its shards back on close ({}); they are taken over once their"
            + " leases expire", config.group(), e.toString());
      }
    } else if (clean && used) {
      // Consumer names are per process: remove ours when they hold nothing, so that names do not pile up in the
      // group. A name with pending entries stays, or those entries could never be claimed (DELCONSUMER drops them).
      for (DeliveryWorker w : workers) {
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

  private synchronized void startLeaseKeeper() {
    if (housekeepingStarted()) {
      return;
    }
    ScheduledExecutorService leaseKeeper = newHousekeeping("handoff-consumer-" + config.group() + "-lease");
    if (ownership != null) {
      long every = ownership.interval().toMillis();
      leaseKeeper.scheduleWithFixedDelay(guarded("the shard leases", this::maintainShards), 0, every,
          TimeUnit.MILLISECONDS);
      return;
    }
    long every = streamSettings.leaseRenewInterval().toMillis();
    leaseKeeper.scheduleWithFixedDelay(guarded("lease renewal", this::renewLeases), every, every,
        TimeUnit.MILLISECONDS);
  }

  private volatile boolean orderingChecked;

  /**
   * An unordered consumer of a group whose consumers hold shard leases would read beside the owners and claim their
   * pending entries, out of order: it is refused, once, before it reads. A database that cannot be reached yet is
   * the workers' to wait for; the check then waits for the next start or poll.
   */
  private void requireSameOrdering() {
    if (ownership != null || orderingChecked) {
      return;
    }
    boolean ordered;
    try (Connection c = dataSource.getConnection()) {
      ordered = shardLeases.exist(c);
    } catch (SQLException e) {
      log.warn("Consumer group '{}': could not check whether the group is ordered ({})", config.group(),
          e.toString());
      return;
    }
    if (ordered) {
      throw new IllegalStateException("consumer group '" + config.group() + "' of topic '" + config.topic().name()
          + "' is ordered per shard (its consumers hold shard leases in " + config.schema() + ".consumer_lease):"
          + " build this consumer with ordering(Ordering.perShard()), or delete the group's rows from consumer_lease"
          + " once none of its ordered consumers runs, to run it unordered");
    }
    orderingChecked = true;
  }

  /** One round of the shard leases' upkeep (ordered groups); a database failure waits for the next round. */
  private void maintainShards() {
    try {
      ownership.maintain();
    } catch (SQLException e) {
      throw new ConsumerException("the shard leases of consumer group '" + config.group() + "' could not be kept"
          + " up", e);
    }
  }

  @Override
  protected List<Health.Reason> degradedReasons() {
    if (ownership == null) {
      return List.of();
    }
    List<Health.Reason> out = new ArrayList<>();
    for (OwnedShard s : ownership.held()) {
      OwnedShard.Blocked b = s.blocked;
      if (b != null) {
        out.add(new Health.Reason(b.stopped() ? "shard-stopped" : "shard-blocked", "Consumer group '"
            + config.group() + "': shard " + s.shard + " of '" + config.topic().name() + "' "
            + (b.stopped() ? "stopped for an operator (handoff ordered resume)" : "waits")
            + " behind entry " + b.streamId() + " since " + b.since() + " (" + b.deliveries() + " deliveries)"));
      }
    }
    return out;
  }

  /** The shards this consumer holds now, for its gauges; empty when the group is not ordered. */
  List<OwnedShard> heldShards() {
    return ownership == null ? List.of() : ownership.held();
  }

  private void renewLeases() {
    for (DeliveryWorker dw : workers) {
      if (!(dw instanceof StreamWorker w)) {
        continue;
      }
      for (Map.Entry<String, Set<String>> e : w.inFlight.entrySet()) {
        List<String> ids = new ArrayList<>(e.getValue());
        if (ids.isEmpty()) {
          continue;
        }
        try {
          for (String lostId : redis.renew(e.getKey(), w.name, ids)) {
            if (e.getValue().remove(lostId)) {
              log.warn("Consumer {}: entry {} of {} was claimed by another consumer while still being handled;"
                  + " the inbox marker decides which commit counts", w.name, lostId, e.getKey());
              reporter().emit(l -> l.leaseLost(e.getKey(), lostId));
            }
          }
        } catch (RuntimeException ex) {
          log.debug("lease renewal for {} on {} failed", w.name, e.getKey(), ex);
        }
      }
    }
  }
}
