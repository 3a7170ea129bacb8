package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.StartPosition;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;

/**
 * A stream consumer's streams and its group on each: which shard a stream is, and whether the group exists. The
 * group is created where missing before the workers read; one that vanished later (Redis lost its data) is
 * recreated from the beginning, never at {@code $}, or whatever the relay re-publishes would be skipped.
 *
 * <p>Thread-safe: creation runs under a lock, and the ready flag is volatile.
 */
final class StreamGroups {

  private final ConsumerConfig config;
  private final RedisGroups redis;
  private final OutcomeReporter reporter;
  private final Logger log;
  private final List<String> keys;
  private final Map<String, Integer> shardOf = new HashMap<>();
  private final ReclaimScan reclaim;
  private final Object lock = new Object();
  private volatile boolean ready;
  private boolean createdOnce;

  StreamGroups(ConsumerConfig config, RedisGroups redis, OutcomeReporter reporter, Logger log) {
    this.config = config;
    this.redis = redis;
    this.reporter = reporter;
    this.log = log;
    this.keys = config.streamKeys();
    for (int i = 0; i < keys.size(); i++) {
      shardOf.put(keys.get(i), i);
    }
    this.reclaim = new ReclaimScan(keys, config.streamSettings().reclaimInterval().toMillis());
  }

  /** The topic's stream keys, shard 0 first. */
  List<String> keys() {
    return keys;
  }

  /** The shard of {@code streamKey}, or -1 for a stream that is not the topic's. */
  int shardOf(String streamKey) {
    return shardOf.getOrDefault(streamKey, -1);
  }

  /** The reclaim pass the workers share, which starts over when the groups are recreated. */
  ReclaimScan reclaim() {
    return reclaim;
  }

  /** Creates the group on every stream where it is missing; a no-op once they are known to exist. */
  void ensure() {
    if (ready) {
      return;
    }
    synchronized (lock) {
      if (ready) {
        return;
      }
      // Only the very first creation may honour NEW_ENTRIES_ONLY.
      boolean recreating = createdOnce;
      boolean fromBeginning = recreating || config.streamSettings().startPosition() == StartPosition.BEGINNING;
      for (String key : keys) {
        if (redis.ensureGroup(key, fromBeginning)) {
          if (recreating) {
            log.warn("Consumer group '{}' was missing on {} (Redis lost its data?) and was recreated from the"
                + " beginning; the inbox absorbs what was processed before", config.group(), key);
            reporter.emit(l -> l.groupRecreated(key));
          } else {
            log.info("Consumer group '{}' created on {} at {}", config.group(), key,
                fromBeginning ? "the beginning (0)" : "the end ($)");
          }
        }
      }
      createdOnce = true;
      ready = true;
    }
  }

  /** Redis said NOGROUP: the next {@link #ensure} recreates the groups from the beginning. */
  void missing() {
    synchronized (lock) {
      ready = false;
      createdOnce = true;
    }
    reclaim.reset();
  }
}
