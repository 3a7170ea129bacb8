package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.StreamId;

/**
 * What a relay knows about a shard it holds the lease of. Its {@link ShardTable} owns it; confined to the relay's work
 * lock.
 */
final class OwnedShard {
  final ShardId id;
  final String streamKey;
  final String relayKey;
  final long epoch;
  long confirmedAdded;
  int batchSize;
  /** Entries published since the stream was last trimmed: at {@code trimSlack} it is trimmed again. */
  long sinceTrim;
  /** The last trim's point: every group finished what is below it. */
  StreamId trimPoint = StreamId.ZERO;
  /** The stream's max-deleted-entry-id when the relay last looked (null: not yet), so a deletion is repaired once. */
  StreamId seenMaxDeleted;
  /**
   * Publishing stopped after the database went back in time, until an operator clears the pause in the lease row
   * ({@code handoff resume}); read from the row when the lease is taken, checked every cycle while set.
   */
  volatile boolean paused;

  OwnedShard(ShardId id, String streamKey, String relayKey, long epoch, long confirmedAdded, int batchSize) {
    this.id = id;
    this.streamKey = streamKey;
    this.relayKey = relayKey;
    this.epoch = epoch;
    this.confirmedAdded = confirmedAdded;
    this.batchSize = batchSize;
  }

  /** Doubles the batch size after a full batch, halves it after one under a quarter full, within the bounds. */
  void adaptBatchSize(int rows, int min, int max) {
    if (rows >= batchSize) {
      batchSize = Math.min(max, batchSize * 2);
    } else if (rows < batchSize / 4) {
      batchSize = Math.max(min, batchSize / 2);
    }
  }
}
