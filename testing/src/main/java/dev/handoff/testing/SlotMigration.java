package dev.handoff.testing;

import java.util.List;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.MigrateParams;

/**
 * One slot on its way from one master to another ({@link RedisCluster#beginMigration}), driven step by step so that
 * a test can act between the steps: while keys are split between the two nodes, the source answers {@code ASK} for
 * the keys it no longer holds and for new keys. Not thread-safe; one test thread drives it.
 */
public final class SlotMigration {

  private static final int MIGRATE_TIMEOUT_MS = 5000;

  private final RedisCluster cluster;
  private final int slot;
  private final ClusterNode source;
  private final ClusterNode target;
  private boolean finished;

  SlotMigration(RedisCluster cluster, int slot, ClusterNode source, ClusterNode target) {
    this.cluster = cluster;
    this.slot = slot;
    this.source = source;
    this.target = target;
  }

  public int slot() {
    return slot;
  }

  public HostAndPort source() {
    return source.address();
  }

  public HostAndPort target() {
    return target.address();
  }

  /**
   * Moves up to {@code max} of the slot's keys still on the source with one {@code CLUSTER GETKEYSINSLOT} and one
   * {@code MIGRATE ... KEYS ...}; returns how many moved (0 when none is left).
   */
  public int moveKeys(int max) {
    requireOpen();
    try (Jedis s = source.admin()) {
      List<byte[]> keys = s.clusterGetKeysInSlotBinary(slot, max);
      if (keys.isEmpty()) {
        return 0;
      }
      s.migrate(target.address().getHost(), target.address().getPort(), 0, MIGRATE_TIMEOUT_MS,
          new MigrateParams(), keys.toArray(new byte[0][]));
      return keys.size();
    }
  }

  /** The keys of the slot still on the source. */
  public long keysOnSource() {
    try (Jedis s = source.admin()) {
      return s.clusterCountKeysInSlot(slot);
    }
  }

  /** The keys of the slot on the target so far. */
  public long keysOnTarget() {
    try (Jedis t = target.admin()) {
      return t.clusterCountKeysInSlot(slot);
    }
  }

  /**
   * Moves what is left, then {@code CLUSTER SETSLOT <slot> NODE <target>} on every master (target first) and waits
   * until every node sees the target as the owner; from then on the source answers {@code MOVED}.
   */
  public void finish() {
    requireOpen();
    while (moveKeys(100) > 0) {
      // next batch
    }
    cluster.finishMigration(slot, source, target);
    finished = true;
  }

  private void requireOpen() {
    if (finished) {
      throw new IllegalStateException("the migration of slot " + slot + " is finished");
    }
  }
}
