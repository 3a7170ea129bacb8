package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.InboxPurgeRefusedException;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListStatus;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.outbox.ListFormat;
import dev.handoff.outbox.MalformedEntryException;
import dev.handoff.outbox.StreamFormat;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * The default {@link ListConsumer}: {@code workers} threads, each with a processing list per shard and its own
 * blocking connection, settling one batch at a time through the same {@link BatchProcessor} as the stream
 * consumer; plus one housekeeping thread that renews the heartbeats and runs the reaper.
 *
 * <p>A worker's step: after a (re)start, what its processing lists still hold; then its failed elements whose
 * backoff is over; then new elements up to the batch size ({@code LMOVE} in a script, or one {@code BLMOVE} when
 * nothing else was found); settle; {@code LREM} what committed; count a delivery for what failed and hold it for a
 * retry. Failed elements stay in the worker's processing list (covered by its heartbeat) and count against its
 * batch size, so in-flight work stays bounded.
 *
 * <p>Thread-safe.
 */
public final class DefaultListConsumer extends AbstractConsumer implements ListConsumer {

  private static final Logger log = LoggerFactory.getLogger(DefaultListConsumer.class);

  private final DataSource dataSource;
  private final ListQueues redis;
  private final OutboxQueries outbox;
  private final Backoff backoff;
  private final List<String> listKeys = new ArrayList<>();
  private final Worker[] workers;
  private final ConsumerFaults faultHook;
  private volatile boolean halted;

  public DefaultListConsumer(ConsumerConfig config, DataSource dataSource, HostAndPort redisServer,
      JedisClientConfig redisConfig, ConsumerFaults faults) {
    super(config, dataSource, log, "list consumer", "List consumer of group", "");
    this.faultHook = faults;
    this.dataSource = dataSource;
    for (int shard = 0; shard < config.topic().shards(); shard++) {
      listKeys.add(ListFormat.listKey(config.keyPrefix(), config.topic().name(), shard));
    }
    this.redis = new ListQueues(redisServer, redisConfig, config.workers(), config.block(), config.redisPoolWait());
    this.outbox = new OutboxQueries(config.schema());
    this.backoff = new Backoff(config.initialBackoff(), config.maxBackoff());
    this.workers = new Worker[config.workers()];
    for (int i = 0; i < workers.length; i++) {
      workers[i] = new Worker(i);
    }
    log.info("List consumer of group '{}' on topic '{}' ({} shard(s)) configured: consumer {}, {} worker(s) x batch"
            + " {}, block {}, heartbeat ttl {} every {}, reaper every {}, maxDeliveries {}",
        config.group(), config.topic().name(), listKeys.size(), config.consumerName(), config.workers(),
        config.batchSize(), config.block(), config.minIdle(), config.leaseRenewInterval(), config.reclaimInterval(),
        config.maxDeliveries());
  }

  /**
   * Test-only: stops everything as a killed process would: no more heartbeats, nothing returned, nothing
   * unregistered. Its processing lists are left for the reaper of another consumer.
   */
  public void halt() {
    halted = true;
    stopNow();
    redis.close();
  }

  @Override
  public ConsumerConfig config() {
    return config;
  }

  @Override
  public void start() {
    beginStart();
    startHousekeeping(true);
    scheduleInboxPurge();
    for (Worker w : workers) {
      Thread t = newWorkerThread(() -> runWorker(w), "handoff-list-consumer-" + config.group() + "-" + w.index);
      w.thread = t;
      t.start();
    }
    log.info("List consumer of group '{}' started: {} worker(s) as {}-*", config.group(), workers.length,
        config.consumerName());
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
    long every = config.leaseRenewInterval().toMillis();
    housekeeping.scheduleWithFixedDelay(guarded("the heartbeat", this::beatQuietly), every, every,
        TimeUnit.MILLISECONDS);
    if (withReaper) {
      long reapEvery = config.reclaimInterval().toMillis();
      housekeeping.scheduleWithFixedDelay(guarded("the reaper", this::reapQuietly), reapEvery, reapEvery,
          TimeUnit.MILLISECONDS);
    }
  }

  private void beat() {
    for (Worker w : workers) {
      Thread t = w.thread;
      if (t != null && !t.isAlive()) {
        // A worker thread that died keeps nothing alive: without its heartbeat the reaper returns what its
        // processing lists hold, as it would for a dead process.
        if (!w.reportedDead) {
          w.reportedDead = true;
          log.error("List consumer {}: worker {} died; its processing lists are left for the reaper after {}",
              config.consumerName(), w.name, config.minIdle());
        }
        continue;
      }
      for (String list : listKeys) {
        redis.heartbeat(list, w.processing.get(list), config.minIdle());
      }
    }
  }

  private void beatQuietly() {
    try {
      beat();
    } catch (RuntimeException e) {
      log.warn("List consumer {}: heartbeat failed ({}); the reaper may return this consumer's elements if it"
          + " stays silent for {}", config.consumerName(), e.toString(), config.minIdle());
    }
  }

  /** One reaper pass over every shard. */
  private long reap() {
    long total = 0;
    for (String list : listKeys) {
      ListQueues.Reaped r = redis.reap(list, config.minIdle().multipliedBy(10), null);
      if (r.returned() > 0) {
        total += r.returned();
        log.warn("List consumer {}: returned {} element(s) of {} dead consumer(s) to the head of {}",
            config.consumerName(), r.returned(), r.consumers(), list);
        emit(l -> l.reclaimed(list, (int) r.returned()));
      }
    }
    return total;
  }

  private void reapQuietly() {
    try {
      reap();
    } catch (RuntimeException e) {
      log.debug("reaper pass failed", e);
    }
  }

  @Override
  public boolean retry(long deadLetterId) {
    InboundMessage m = processor.retry(deadLetterId);
    if (m != null) {
      emit(l -> l.handled(m));
    }
    return m != null;
  }

  @Override
  public int retryAll() {
    return processor.retryAll(this::retry);
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
    long now = config.clock().millis();
    List<ListStatus.ShardStatus> shards = new ArrayList<>();
    long dead;
    try (Connection c = dataSource.getConnection()) {
      dead = processor.deadLetters().countDead(c, config.group());
      for (int shard = 0; shard < listKeys.size(); shard++) {
        shards.add(shardStatus(c, shard, now));
      }
    } catch (SQLException e) {
      throw new ConsumerException("could not read the status of consumer group '" + config.group() + "'", e);
    }
    return new ListStatus(config.group(), config.topic().name(), shards, dead, duplicatesSkipped.get());
  }

  private ListStatus.ShardStatus shardStatus(Connection c, int shard, long now) {
    String list = listKeys.get(shard);
    Map<String, Long> processing = new LinkedHashMap<>();
    Map<String, Boolean> alive = new LinkedHashMap<>();
    String oldest = null;
    for (ListQueues.Holder h : redis.holders(list)) {
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
        redis.length(list), processing, alive, oldest, age, relay.get("last"), backlog);
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
    if (used) {
      // Whatever this consumer still holds (abandoned, or waiting for a retry) goes back to the head now, rather than
      // after the heartbeat TTL; the registrations and heartbeats go too.
      for (Worker w : workers) {
        for (String list : listKeys) {
          try {
            long returned = redis.reap(list, config.minIdle().multipliedBy(10), w.processing.get(list)).returned();
            if (returned > 0) {
              log.info("List consumer {}: returned {} unfinished element(s) to the head of {}", w.name, returned,
                  list);
            }
          } catch (RuntimeException e) {
            log.warn("List consumer {}: could not return its elements of {} ({}); the reaper of another consumer"
                + " will after {}", w.name, list, e.toString(), config.minIdle());
          }
        }
      }
    }
    redis.close();
  }

  private static int compare(String a, String b) {
    int da = a.indexOf('-');
    int db = b.indexOf('-');
    int c = Long.compare(Long.parseLong(a.substring(0, da)), Long.parseLong(b.substring(0, db)));
    return c != 0 ? c : Long.compare(Long.parseLong(a.substring(da + 1)), Long.parseLong(b.substring(db + 1)));
  }

  /** An element this worker holds in its processing list, waiting for a retry. */
  private record Held(String list, byte[] element, long deliveries, long dueAtMillis) {}

  /** One worker: a name, a processing list per shard, and its failed elements waiting for their retry. */
  private final class Worker implements WorkerLoop {
    final int index;
    final String name;
    volatile Thread thread;
    boolean reportedDead;
    final Map<String, String> processing = new HashMap<>();
    final List<Held> held = new ArrayList<>();
    boolean ownReplayed;
    int rotation;
    Throwable lastDatabaseError;

    Worker(int index) {
      this.index = index;
      this.name = config.workerName(index);
      for (String list : listKeys) {
        processing.put(list, ListFormat.processingKey(list, name));
      }
    }

    @Override
    public Throwable blockingStep() {
      step(true);
      return lastDatabaseError;
    }

    @Override
    public void databaseFailed(Throwable error) {
      log.warn("List consumer {}: database failure, unsettled elements are held for a retry: {}", name,
          error.toString());
    }

    @Override
    public void redisFailed(JedisException e) {
      log.warn("List consumer {}: Redis unavailable ({}); retrying", name, e.toString());
      forgetHeld();
    }

    @Override
    public boolean failed(Throwable e) {
      if (halted) {
        return false;
      }
      log.error("List consumer {}: unexpected failure; retrying", name, e);
      forgetHeld();
      return true;
    }

    /**
     * After a failure mid-step nothing is known about what the processing lists hold (taken but not acknowledged,
     * say): read them again, as after a restart, rather than leave elements there that no one would ever handle.
     */
    private void forgetHeld() {
      held.clear();
      ownReplayed = false;
    }

    PollResult step(boolean blocking) {
      List<Delivery> batch = new ArrayList<>();
      Map<Delivery, byte[]> raw = new IdentityHashMap<>();
      if (!ownReplayed) {
        // A restart under the same name: the previous life's unfinished elements, each counted as a delivery.
        for (String list : listKeys) {
          List<byte[]> elements = redis.held(processing.get(list));
          if (elements.isEmpty()) {
            continue;
          }
          long[] counts = redis.countFailed(list, processing.get(list), elements, messageIds(elements));
          for (int i = 0; i < elements.size(); i++) {
            if (counts[i] >= 0) {
              add(batch, raw, list, elements.get(i), counts[i] + 1);
            }
          }
        }
        ownReplayed = true;
      }
      long now = config.clock().millis();
      long nextDue = Long.MAX_VALUE;
      for (Iterator<Held> it = held.iterator(); it.hasNext(); ) {
        Held h = it.next();
        if (h.dueAtMillis() <= now && batch.size() < config.batchSize()) {
          it.remove();
          add(batch, raw, h.list(), h.element(), h.deliveries());
        } else {
          nextDue = Math.min(nextDue, h.dueAtMillis());
        }
      }
      int free = config.batchSize() - held.size() - batch.size();
      for (int j = 0; j < listKeys.size() && free > 0; j++) {
        String list = listKeys.get((rotation + j) % listKeys.size());
        for (ListQueues.Taken t : redis.take(list, processing.get(list), free)) {
          add(batch, raw, list, t.element(), t.previousDeliveries() + 1);
          free--;
        }
      }
      if (batch.isEmpty() && free > 0 && blocking && running()) {
        String list = listKeys.get(rotation % listKeys.size());
        rotation = (rotation + 1) % listKeys.size();
        long wait = Math.min(config.block().toMillis() / listKeys.size(), nextDue - now);
        ListQueues.Taken t = redis.blockingTake(list, processing.get(list), Duration.ofMillis(Math.max(10, wait)));
        if (t != null) {
          add(batch, raw, list, t.element(), t.previousDeliveries() + 1);
          for (ListQueues.Taken more : redis.take(list, processing.get(list), free - 1)) {
            add(batch, raw, list, more.element(), more.previousDeliveries() + 1);
          }
        }
      }
      return settle(batch, raw);
    }

    private void add(List<Delivery> batch, Map<Delivery, byte[]> raw, String list, byte[] element, long deliveries) {
      int shard = listKeys.indexOf(list);
      Delivery d;
      try {
        ListFormat.Element e = ListFormat.decode(element);
        d = Delivery.of(list, shard, e.id(), deliveries, e.fields());
      } catch (MalformedEntryException e) {
        // Still dead-lettered under an ID of its own: the header's, or a digest of the element.
        String[] header = ListFormat.header(element);
        String id = header != null ? header[0] : "x-" + sha1(element);
        Map<byte[], byte[]> fields = header == null ? Map.of()
            : Map.of(StreamFormat.MESSAGE_ID.getBytes(StandardCharsets.UTF_8),
                header[1].getBytes(StandardCharsets.UTF_8));
        d = Delivery.of(list, shard, id, deliveries, fields);
      }
      batch.add(d);
      raw.put(d, element);
    }

    private PollResult settle(List<Delivery> batch, Map<Delivery, byte[]> raw) {
      lastDatabaseError = null;
      if (batch.isEmpty()) {
        return PollResult.EMPTY;
      }
      long started = System.nanoTime();
      BatchProcessor.Settled s = processor.settle(batch, BatchProcessor.Mode.DELIVERY, faultHook, () -> abandoning());
      if (s.committed() > 0) {
        faultHook.at(ConsumerFaults.Point.AFTER_COMMIT);
      }
      // Acknowledge what committed: LREM count 1 per element.
      Map<String, List<Delivery>> acks = new LinkedHashMap<>();
      Consumer<Delivery> ack = d -> acks.computeIfAbsent(d.streamKey, k -> new ArrayList<>()).add(d);
      s.handled.forEach(ack);
      s.duplicates.forEach(ack);
      s.dead.forEach(x -> ack.accept(x.delivery()));
      s.lost.forEach(ack);
      acks.forEach((list, ds) -> {
        List<byte[]> elements = new ArrayList<>(ds.size());
        ds.forEach(d -> elements.add(raw.get(d)));
        redis.ack(list, processing.get(list), elements, messageIds(elements));
      });
      // Count a delivery for each failure and hold the element (still in our processing list) for its retry.
      long now = config.clock().millis();
      Map<Delivery, Duration> backoffs = new HashMap<>();
      Map<String, List<Delivery>> failedByList = new LinkedHashMap<>();
      s.failed.forEach(f -> failedByList.computeIfAbsent(f.delivery().streamKey, k -> new ArrayList<>())
          .add(f.delivery()));
      failedByList.forEach((list, ds) -> {
        List<byte[]> elements = new ArrayList<>(ds.size());
        ds.forEach(d -> elements.add(raw.get(d)));
        long[] counts = redis.countFailed(list, processing.get(list), elements, messageIds(elements));
        for (int i = 0; i < ds.size(); i++) {
          Delivery d = ds.get(i);
          Duration wait = backoff.after(Math.max(1, d.deliveries));
          backoffs.put(d, wait);
          if (counts[i] >= 0) {
            held.add(new Held(list, elements.get(i), Math.max(counts[i], d.deliveries) + 1, now + wait.toMillis()));
          }
        }
      });
      // A database failure decided nothing: hold those elements too, for a retry that counts no delivery.
      for (Delivery d : s.abandoned) {
        held.add(new Held(d.streamKey, raw.get(d), d.deliveries, now + config.initialBackoff().toMillis()));
      }
      report(s, backoffs, System.nanoTime() - started);
      lastDatabaseError = s.databaseError;
      return new PollResult(batch.size(), s.handled.size(), s.duplicates.size(),
          s.failed.size() + s.abandoned.size(), s.dead.size(), s.lost.size(), 0);
    }

    private void report(BatchProcessor.Settled s, Map<Delivery, Duration> backoffs, long nanos) {
      emitHandled(s);
      for (BatchProcessor.Failure f : s.failed) {
        Delivery d = f.delivery();
        log.info("List consumer {}: message {} ({} of {}, delivery {}) failed, retry in {}: {}", name,
            d.messageId(), d.id, d.streamKey, d.deliveries, backoffs.get(d), f.error().toString());
        if (d.message != null) {
          emit(l -> l.failed(d.message, f.error(), backoffs.get(d)));
        }
      }
      for (BatchProcessor.Dead x : s.dead) {
        Delivery d = x.delivery();
        log.warn("List consumer {}: element {} of {} (message {}) dead-lettered after {} deliveries: {}", name, d.id,
            d.streamKey, d.messageId(), d.deliveries, x.error().lines().findFirst().orElse(""));
        emit(l -> l.deadLettered(d.streamKey, d.id, d.messageId(), x.error()));
      }
      emitCommitted(s, nanos);
    }
  }

  private static List<String> messageIds(List<byte[]> elements) {
    List<String> out = new ArrayList<>(elements.size());
    for (byte[] e : elements) {
      String[] header = ListFormat.header(e);
      out.add(header == null ? null : header[1]);
    }
    return out;
  }

  private static String sha1(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
