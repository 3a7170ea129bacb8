package dev.handoff.consumer.internal;

import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.internal.Settled.Failure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One stream-consumer worker: a consumer name in the group, its replay of its own pending entries, and the entries
 * it holds right now (whose leases the lease keeper renews).
 *
 * <p>A step: replay its own pending entries (once, from {@code 0-0}, until the replay is empty); when a reclaim
 * pass is due, claim abandoned entries ({@code XAUTOCLAIM}, one step per stream, continuing the cursor of the
 * previous step until it comes back as {@code 0-0}); fill the rest of the batch with new entries
 * ({@code XREADGROUP >}, blocking only when nothing else was found); settle; XACK what committed; push failed
 * entries' idle time back by their backoff. A batch that the environment's failure abandoned (the database, a
 * grant, a table) is held by the worker, its leases renewed, and settled again once the pause is over, so the
 * outage counts no delivery; one that close abandoned stays pending, for this worker's own replay or another
 * consumer's reclaim.
 *
 * <p>Not thread-safe, except {@link #inFlight}, which the lease keeper reads.
 */
final class StreamWorker extends DeliveryWorker {

  private final RedisGroups redis;
  private final StreamGroups groups;
  private final Duration minIdle;
  private final Map<String, String> ownCursor = new LinkedHashMap<>();
  private boolean ownPendingDone;
  private int rotation;
  /** A batch the environment's failure abandoned, to settle again as it was read, without reading it again. */
  private List<Delivery> heldAfterFailure = List.of();
  /**
   * The entries of the batch being settled or held, per stream: what the lease keeper renews. An entry it finds
   * taken by another consumer is removed, so the worker does not settle it again.
   */
  final Map<String, Set<String>> inFlight = new ConcurrentHashMap<>();

  StreamWorker(Shared shared, int index, RedisGroups redis, StreamGroups groups) {
    super(shared, index);
    this.redis = redis;
    this.groups = groups;
    this.minIdle = config.streamSettings().minIdle();
    resetOwnReplay();
  }

  private void resetOwnReplay() {
    ownCursor.clear();
    for (String key : groups.keys()) {
      ownCursor.put(key, "0-0");
    }
    ownPendingDone = false;
    heldAfterFailure = List.of(); // the replay of this worker's pending entries reads them again
  }

  @Override
  void replaced() {
    super.replaced();
    resetOwnReplay();
    inFlight.clear();
  }

  @Override
  public boolean failed(Throwable e) {
    if (e instanceof RedisGroups.GroupMissingException) {
      groupMissing(e);
    } else {
      // What the failed step held is unknown: read this worker's pending entries again, as after a restart.
      resetOwnReplay();
      shared.log().error("Consumer {}: unexpected failure; retrying", name, e);
    }
    return true;
  }

  private void groupMissing(Throwable e) {
    groups.missing();
    resetOwnReplay();
    shared.log().warn("Consumer {}: {}; recreating the group from the beginning", name, e.getMessage());
  }

  @Override
  PollResult step(boolean blocking) {
    try {
      groups.ensure();
      if (!heldAfterFailure.isEmpty()) {
        List<Delivery> again = stillHeld(heldAfterFailure);
        heldAfterFailure = List.of();
        if (!again.isEmpty()) {
          return settle(again, 0);
        }
      }
      List<Delivery> batch = new ArrayList<>();
      if (!ownPendingDone) {
        replayOwn(batch);
        if (!batch.isEmpty()) {
          return settle(batch, 0);
        }
      }
      int reclaimed = reclaimStep(batch, !blocking);
      int free = config.reading().batchSize() - batch.size();
      if (free > 0 && (!blocking || shared.running().getAsBoolean())) {
        readNew(batch, free, blocking && batch.isEmpty());
      }
      return settle(batch, reclaimed);
    } catch (RedisGroups.GroupMissingException e) {
      if (!blocking) {
        // pollOnce: heal at once so the next call finds the group again
        groupMissing(e);
        return PollResult.EMPTY;
      }
      throw e;
    }
  }

  private void replayOwn(List<Delivery> batch) {
    for (String key : new ArrayList<>(ownCursor.keySet())) {
      int free = config.reading().batchSize() - batch.size();
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
    ReclaimScan reclaim = groups.reclaim();
    if (!reclaim.tryBegin(clock.millis(), force)) {
      return 0;
    }
    int claimedTotal = 0;
    try {
      for (String key : reclaim.remaining()) {
        int free = config.reading().batchSize() - batch.size();
        if (free <= 0) {
          break;
        }
        RedisGroups.AutoClaim step =
            redis.autoClaim(key, name, minIdle.toMillis(), reclaim.cursor(key), free);
        reclaim.advance(key, step.nextCursor());
        int before = batch.size();
        addWithCounts(batch, key, step.claimed());
        for (String deleted : step.deletedIds()) {
          // XAUTOCLAIM already dropped these from the PEL: their payload is gone.
          batch.add(Delivery.of(key, groups.shardOf(key), deleted, 0, null));
        }
        int n = batch.size() - before;
        if (n > 0) {
          claimedTotal += n;
          shared.reporter().emit(l -> l.reclaimed(key, n));
          shared.log().debug("Consumer {} claimed {} abandoned entr(ies) of {}", name, n, key);
        }
      }
    } finally {
      reclaim.end(clock.millis());
    }
    return claimedTotal;
  }

  private void readNew(List<Delivery> batch, int free, boolean block) {
    List<String> all = groups.keys();
    int streams = Math.min(all.size(), free);
    List<String> keys = new ArrayList<>(streams);
    for (int j = 0; j < streams; j++) {
      keys.add(all.get((rotation + j) % all.size()));
    }
    rotation = (rotation + streams) % all.size();
    Duration wait = block ? config.reading().block() : null;
    // COUNT applies per stream: split the free capacity so the whole reply fits in it.
    for (RedisGroups.RawEntry e : redis.readNew(name, keys, free / streams, wait)) {
      batch.add(Delivery.of(e.streamKey(), groups.shardOf(e.streamKey()), e.id(), 1, e.fields()));
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
      batch.add(Delivery.of(key, groups.shardOf(key), ids.get(i), counts[i], entries.get(i).fields()));
    }
  }

  @Override
  protected void beforeSettle(List<Delivery> batch) {
    for (Delivery d : batch) {
      inFlight.computeIfAbsent(d.streamKey, k -> ConcurrentHashMap.newKeySet()).add(d.id);
    }
  }

  @Override
  protected void afterSettle() {
    inFlight.clear();
    beforeSettle(heldAfterFailure); // still this worker's: keep their leases renewed through the pause
  }

  private List<Delivery> stillHeld(List<Delivery> held) {
    List<Delivery> out = new ArrayList<>(held.size());
    for (Delivery d : held) {
      Set<String> ids = inFlight.get(d.streamKey);
      if (ids != null && ids.contains(d.id)) {
        out.add(d);
      }
    }
    return out;
  }

  @Override
  protected void acknowledge(Map<String, List<Delivery>> byKey) {
    Map<String, List<String>> ids = new HashMap<>();
    byKey.forEach((key, ds) -> {
      List<String> keyIds = new ArrayList<>(ds.size());
      ds.forEach(d -> keyIds.add(d.id));
      ids.put(key, keyIds);
      // Stop renewing what is about to be acknowledged: a renewal that ran after the XACK would find the entries
      // gone from the pending list and report them as taken by another consumer.
      Set<String> held = inFlight.get(key);
      if (held != null) {
        keyIds.forEach(held::remove);
      }
    });
    redis.ackAll(ids);
  }

  /** A failed entry stays pending; its idle time is set back so that it becomes claimable when its backoff ends. */
  @Override
  protected void holdForRetry(List<Failure> failed, Map<Delivery, Duration> backoffs, List<Delivery> abandoned) {
    if (!abandoned.isEmpty() && !shared.abandoning().getAsBoolean()) {
      heldAfterFailure = List.copyOf(abandoned);
    }
    Map<String, Map<String, Long>> defer = new HashMap<>();
    for (Failure f : failed) {
      Delivery d = f.delivery();
      long idle = Math.max(0, minIdle.toMillis() - backoffs.get(d).toMillis());
      defer.computeIfAbsent(d.streamKey, k -> new LinkedHashMap<>()).put(d.id, idle);
    }
    defer.forEach((key, ids) -> redis.defer(key, name, ids));
  }
}
