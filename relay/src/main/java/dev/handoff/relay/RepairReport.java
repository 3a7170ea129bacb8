package dev.handoff.relay;

import dev.handoff.core.ShardId;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a repair of entries gone from a topic's streams did (or, for a dry run, would do), per shard. See
 * {@link StreamRepair}. Immutable.
 *
 * @param topic the topic repaired
 * @param dryRun whether nothing was changed (the counts say what a real run would have done)
 * @param shards one entry per shard of the topic that has a {@code relay_lease} row, in shard order
 */
public record RepairReport(String topic, boolean dryRun, List<ShardRepair> shards) {

  public RepairReport {
    shards = List.copyOf(shards);
  }

  /** Rows reset for republishing, over every shard. */
  public long rowsReset() {
    return shards.stream().mapToLong(s -> s.rowsReset().size()).sum();
  }

  /** Pending entries acknowledged (their body gone, their row reset), over every shard and group. */
  public long acknowledged() {
    return shards.stream().mapToLong(ShardRepair::acknowledgedCount).sum();
  }

  /** Pending entries whose body is gone and whose outbox row is gone too, over every shard. */
  public long unrecoverable() {
    return shards.stream().mapToLong(s -> s.unrecoverable().size()).sum();
  }

  /**
   * One shard's repair.
   *
   * @param shard the shard
   * @param streamKey its stream
   * @param skipped why the shard was not checked ("" when it was): its stream does not exist (a lost stream, which
   *     the relay owning the shard republishes by itself with the original IDs, or a shard never published to)
   * @param threshold the lowest last-delivered ID over the stream's groups when it was checked (with no group, the
   *     shard's watermark or the retention cut): every published entry above it is still needed by some group
   * @param rowsChecked published rows of the shard read from the outbox
   * @param rowsReset outbox ids made unpublished again (without stream ID), in id order: the relay owning the shard
   *     publishes them again at the end of the stream, with new IDs
   * @param acknowledged per consumer group, its pending entries whose body was gone and whose row was reset, which
   *     were acknowledged (XACK) after the reset committed
   * @param unrecoverable stream IDs of pending entries whose body is gone and whose outbox row is gone too (purged by
   *     the outbox retention): nothing can send them again; they stay pending, and the consumers dead-letter them
   */
  public record ShardRepair(ShardId shard, String streamKey, String skipped, String threshold, long rowsChecked,
      List<Long> rowsReset, Map<String, Integer> acknowledged, List<String> unrecoverable) {

    public ShardRepair {
      rowsReset = List.copyOf(rowsReset);
      acknowledged = Collections.unmodifiableMap(new TreeMap<>(acknowledged));
      unrecoverable = List.copyOf(unrecoverable);
    }

    /** Pending entries acknowledged over every group. */
    public long acknowledgedCount() {
      return acknowledged.values().stream().mapToLong(Integer::longValue).sum();
    }

    /** Whether anything was (or, in a dry run, would be) reset, acknowledged, or found unrecoverable. */
    public boolean foundAnything() {
      return !rowsReset.isEmpty() || !acknowledged.isEmpty() || !unrecoverable.isEmpty();
    }
  }
}
