package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.internal.Settled.Failure;
import dev.handoff.consumer.ordering.WhenExhausted;
import dev.handoff.core.internal.StreamId;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * One worker of a group ordered per shard: it works on the shards its consumer holds that fall to it
 * ({@link ShardOwnership#assignedTo}), each under the shard's lock, one batch at a time and in stream order.
 *
 * <p>A step, per shard: what is held first (a failed message and its successors, once the backoff is over; the
 * whole batch again after the environment failed); else the shard's pending entries, which a shard just taken holds
 * from its former owner, read in order from the start; else new entries. When none of its shards had anything, it
 * waits for new entries on those that are idle, for a short while. Every batch commits under the shard's lease
 * epoch ({@link ShardLeases#fence}); a failed message stops its successors, which wait in memory (and stay pending
 * in Redis for the next owner). All of a group's ordered consumers read as the one Redis consumer
 * {@value #CONSUMER}, so a new owner finds its predecessor's pending entries as its own.
 *
 * <p>Not thread-safe: one thread runs it.
 */
final class OrderedWorker extends DeliveryWorker {

  /** The Redis consumer name every ordered consumer of a group reads as. */
  static final String CONSUMER = "ordered";
  /** The longest a worker waits for new entries, so that retries, resumes and rebalancing are looked at soon. */
  static final Duration MAX_WAIT = Duration.ofMillis(250);
  private static final long RESUME_CHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final RedisGroups redis;
  private final StreamGroups groups;
  private final ShardOwnership ownership;
  private final DataSource dataSource;
  private final int workers;
  private final boolean deadLetterExhausted;
  /** The shard whose batch is being settled, and how it came out: for {@link #holdForRetry}. */
  private OwnedShard current;
  private Settled outcome;
  private String skipStreamId;

  OrderedWorker(Shared shared, int index, RedisGroups redis, StreamGroups groups, ShardOwnership ownership,
      DataSource dataSource) {
    super(shared, index);
    this.redis = redis;
    this.groups = groups;
    this.ownership = ownership;
    this.dataSource = dataSource;
    this.workers = config.reading().workers();
    this.deadLetterExhausted = config.streamSettings().ordering().whenExhausted()
        == WhenExhausted.DEAD_LETTER_AND_CONTINUE;
  }

  @Override
  public boolean failed(Throwable e) {
    if (e instanceof RedisGroups.GroupMissingException) {
      groups.missing();
      shared.log().warn("Consumer {}: {}; recreating the group from the beginning", name, e.getMessage());
    } else {
      shared.log().error("Consumer {}: unexpected failure; retrying", name, e);
    }
    // What the failed step held is unknown: each shard reads its pending entries again, in order.
    for (OwnedShard s : ownership.assignedTo(index, workers)) {
      if (s.lock.tryLock()) {
        try {
          s.held = List.of();
          s.pendingToRead = true;
          s.pendingCursor = "0-0";
        } finally {
          s.lock.unlock();
        }
      }
    }
    return true;
  }

  @Override
  PollResult step(boolean blocking) {
    groups.ensure();
    List<OwnedShard> locked = new ArrayList<>();
    for (OwnedShard s : ownership.assignedTo(index, workers)) {
      if (s.lock.tryLock()) {
        if (s.released) {
          s.lock.unlock();
        } else {
          locked.add(s);
        }
      }
    }
    try {
      PollResult total = PollResult.EMPTY;
      for (OwnedShard s : locked) {
        total = total.plus(stepShard(s));
      }
      if (total.read() > 0 || !blocking || !shared.running().getAsBoolean()) {
        return total;
      }
      return waitForNew(locked);
    } finally {
      locked.forEach(s -> s.lock.unlock());
    }
  }

  /** One step on one shard, without blocking. */
  private PollResult stepShard(OwnedShard s) {
    long now = System.nanoTime();
    if (s.stopped && !resumed(s, now)) {
      return PollResult.EMPTY;
    }
    if (!s.held.isEmpty()) {
      if (now < s.retryAtNanos) {
        return PollResult.EMPTY;
      }
      List<Delivery> batch = s.held;
      s.held = List.of();
      if (s.headFailed) {
        batch = withHeadRedelivered(s, batch);
      }
      return settleShard(s, batch);
    }
    if (s.pendingToRead) {
      List<RedisGroups.RawEntry> page = redis.readOwnPending(CONSUMER, s.streamKey, s.pendingCursor,
          config.reading().batchSize());
      if (page.isEmpty()) {
        s.pendingToRead = false;
        return PollResult.EMPTY;
      }
      s.pendingCursor = page.get(page.size() - 1).id();
      return settleShard(s, withCounts(s, page));
    }
    return settleNew(s, redis.readNew(CONSUMER, List.of(s.streamKey), config.reading().batchSize(), null));
  }

  /** Waits a short while for new entries on the idle shards among {@code locked}, and settles what came. */
  private PollResult waitForNew(List<OwnedShard> locked) {
    List<OwnedShard> idle = locked.stream().filter(OwnedShard::idle).toList();
    Duration wait = config.reading().block().compareTo(MAX_WAIT) < 0 ? config.reading().block() : MAX_WAIT;
    if (idle.isEmpty()) {
      try {
        Thread.sleep(wait.toMillis()); // nothing of its own to wait on: a retry's backoff, a stop, no shard yet
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return PollResult.EMPTY;
    }
    List<String> keys = idle.stream().map(s -> s.streamKey).toList();
    List<RedisGroups.RawEntry> entries = redis.readNew(CONSUMER, keys,
        Math.max(1, config.reading().batchSize() / keys.size()), wait);
    Map<String, List<RedisGroups.RawEntry>> byKey = new LinkedHashMap<>();
    entries.forEach(e -> byKey.computeIfAbsent(e.streamKey(), k -> new ArrayList<>()).add(e));
    PollResult total = PollResult.EMPTY;
    for (OwnedShard s : idle) {
      List<RedisGroups.RawEntry> mine = byKey.get(s.streamKey);
      if (mine != null) {
        total = total.plus(settleNew(s, mine));
      }
    }
    return total;
  }

  /**
   * Settles entries just read with {@code >}, unless some other reader moved entries of the shard into the pending
   * list meanwhile (a former owner that woke up past its lease and read before it learned it lost the shard): those
   * come first, so the shard reads its pending entries again from the start, these among them, in order.
   */
  private PollResult settleNew(OwnedShard s, List<RedisGroups.RawEntry> entries) {
    if (entries.isEmpty()) {
      return PollResult.EMPTY;
    }
    if (redis.pendingCount(s.streamKey) > entries.size()) {
      shared.log().warn("Consumer {}: shard {} has pending entries it did not read (a former owner read after it"
          + " lost the lease); reading them first, in order", name, s.shard);
      s.pendingToRead = true;
      s.pendingCursor = "0-0";
      return PollResult.EMPTY;
    }
    List<Delivery> batch = new ArrayList<>(entries.size());
    for (RedisGroups.RawEntry e : entries) {
      batch.add(Delivery.of(e.streamKey(), s.shard, e.id(), 1, e.fields()));
    }
    return settleShard(s, batch);
  }

  /** A stopped shard looks for the operator's answer now and then: retry its message, or dead-letter it. */
  private boolean resumed(OwnedShard s, long now) {
    if (now < s.nextResumeCheckNanos) {
      return false;
    }
    s.nextResumeCheckNanos = now + RESUME_CHECK_NANOS;
    ShardLeases.Resume answer;
    try (Connection c = dataSource.getConnection()) {
      answer = ownership.leases().takeResume(c, s.shard, ownership.owner(), s.epoch);
    } catch (SQLException e) {
      shared.log().warn("Consumer {}: could not look for an operator's answer to stopped shard {}: {}", name,
          s.shard, e.toString());
      return false;
    }
    if (answer == null) {
      return false;
    }
    shared.log().info("Consumer {}: an operator resumed shard {} ({} its message)", name, s.shard,
        answer == ShardLeases.Resume.SKIP ? "dead-lettering" : "trying again");
    s.stopped = false;
    s.retryAtNanos = now;
    if (answer == ShardLeases.Resume.SKIP && !s.held.isEmpty()) {
      skipStreamId = s.held.get(0).id;
    }
    return true;
  }

  /** The held batch with its head delivered again through Redis, so that Redis counts the new delivery. */
  private List<Delivery> withHeadRedelivered(OwnedShard s, List<Delivery> held) {
    List<RedisGroups.RawEntry> head = redis.readOwnPending(CONSUMER, s.streamKey, "0-0", 1);
    if (head.isEmpty() || !head.get(0).id().equals(held.get(0).id)) {
      // Not this worker's pending head any more (acknowledged, or the group was recreated): read again from Redis.
      s.pendingToRead = true;
      s.pendingCursor = "0-0";
      return List.of();
    }
    List<Delivery> out = new ArrayList<>(held.size());
    out.addAll(withCounts(s, head));
    out.addAll(held.subList(1, held.size()));
    return out;
  }

  private List<Delivery> withCounts(OwnedShard s, List<RedisGroups.RawEntry> entries) {
    List<String> ids = entries.stream().map(RedisGroups.RawEntry::id).toList();
    long[] counts = redis.deliveryCounts(s.streamKey, CONSUMER, ids);
    List<Delivery> out = new ArrayList<>(entries.size());
    for (int i = 0; i < entries.size(); i++) {
      if (counts[i] >= 0) {
        out.add(Delivery.of(s.streamKey, s.shard, ids.get(i), counts[i], entries.get(i).fields()));
      }
    }
    return out;
  }

  private PollResult settleShard(OwnedShard s, List<Delivery> batch) {
    if (batch.isEmpty()) {
      return PollResult.EMPTY;
    }
    current = s;
    try {
      return settle(batch, 0);
    } finally {
      current = null;
      outcome = null;
      skipStreamId = null;
    }
  }

  @Override
  protected Settled settleIn(List<Delivery> batch, ConsumerFaults faults) {
    OwnedShard s = current;
    OrderedSettling ordered = new OrderedSettling(
        (c, position) -> ownership.leases().fence(c, s.shard, ownership.owner(), s.epoch, position),
        deadLetterExhausted, skipStreamId, config.streamSettings().ordering().leaseTtl());
    outcome = shared.settler().settle(batch, BatchSettler.Mode.DELIVERY, faults, shared.abandoning(), ordered);
    return outcome;
  }

  @Override
  protected void acknowledge(Map<String, List<Delivery>> byKey) {
    Map<String, List<String>> ids = new HashMap<>();
    byKey.forEach((key, ds) -> ids.put(key, ds.stream().map(d -> d.id).toList()));
    redis.ackAll(ids);
  }

  /**
   * Keeps what did not commit, in stream order, for the shard's next step: a failed head waits for its backoff
   * (and, exhausted under {@code STOP_SHARD}, for an operator), recorded in the lease row for status; what the
   * environment abandoned or a split left over goes again at once. A batch whose fence found another epoch gives the
   * shard up.
   */
  @Override
  protected void holdForRetry(List<Failure> failed, Map<Delivery, Duration> backoffs, List<Delivery> abandoned) {
    OwnedShard s = current;
    Settled x = outcome;
    if (x != null && x.fencedOut) {
      shared.log().warn("Consumer {}: its batch of shard {} rolled back: another consumer took the shard (epoch {}"
          + " is over); nothing of it committed", name, s.shard, s.epoch);
      ownership.lose(s.shard, "a batch found that another consumer took it");
      return;
    }
    List<Delivery> waiting = new ArrayList<>(abandoned);
    failed.forEach(f -> waiting.add(f.delivery()));
    if (x != null) {
      waiting.addAll(x.deferred);
    }
    waiting.sort(Comparator.comparing(d -> StreamId.parse(d.id)));
    s.held = List.copyOf(waiting);
    Failure head = failed.isEmpty() ? null : failed.get(0);
    s.headFailed = head != null && !waiting.isEmpty() && waiting.get(0) == head.delivery();
    s.retryAtNanos = System.nanoTime() + (s.headFailed ? backoffs.get(head.delivery()).toNanos() : 0);
    if (s.headFailed) {
      s.stopped = x != null && x.stoppedHead;
      OwnedShard.Blocked was = s.blocked;
      s.blocked = new OwnedShard.Blocked(head.delivery().id,
          was != null && was.streamId().equals(head.delivery().id) ? was.since() : clock.instant(),
          head.delivery().deliveries, s.stopped);
      recordBlock(s, head);
    } else if (waiting.isEmpty() || x == null || x.committed() > 0) {
      s.blocked = null; // the lease row was cleared by the commit's fence
    }
  }

  private void recordBlock(OwnedShard s, Failure head) {
    try (Connection c = dataSource.getConnection()) {
      ownership.leases().block(c, s.shard, ownership.owner(), s.epoch, head.delivery(),
          BatchSettler.describe(head.error()), s.stopped);
    } catch (SQLException e) {
      shared.log().warn("Consumer {}: could not record the message that blocks shard {}: {}", name, s.shard,
          e.toString());
    }
    if (s.stopped) {
      shared.log().error("Consumer {}: shard {} of '{}' stopped: entry {} failed {} times; it waits for an operator"
              + " (handoff ordered resume)", name, s.shard, config.topic().name(), head.delivery().id,
          head.delivery().deliveries);
    }
  }
}
