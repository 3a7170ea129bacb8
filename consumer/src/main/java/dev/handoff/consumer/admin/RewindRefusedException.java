package dev.handoff.consumer.admin;

import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.HandoffConsumer;

/**
 * {@link StreamAdmin#rewind} refused: nothing was changed on any shard. Either a shard's stream no longer holds
 * entries at or after the target (trimmed or deleted; the outbox still has them, within its retention: replay them
 * with {@link HandoffConsumer#replayFromOutbox}), or the stream or the group does not exist.
 */
public final class RewindRefusedException extends ConsumerException {

  private static final long serialVersionUID = 1L;

  /** Why a rewind was refused. */
  public enum Reason {
    /** Entries at or after the target were trimmed or deleted from the shard's stream. */
    BELOW_RETENTION,
    /** The shard's stream does not exist. */
    NO_STREAM,
    /** The group does not exist on the shard's stream. */
    NO_GROUP,
    /** The topic has no shard: no {@code relay_lease} row and no stream in Redis, or not the shard named. */
    NO_SHARD
  }

  private final Reason reason;
  private final int shard;
  private final String streamKey;
  private final String oldestRetainedId;

  public RewindRefusedException(String message, Reason reason, int shard, String streamKey,
      String oldestRetainedId) {
    super(message);
    this.reason = reason;
    this.shard = shard;
    this.streamKey = streamKey;
    this.oldestRetainedId = oldestRetainedId;
  }

  public Reason reason() {
    return reason;
  }

  /** The shard that refused, or -1 for {@link Reason#NO_SHARD}. */
  public int shard() {
    return shard;
  }

  /** The stream that refused, or null for {@link Reason#NO_SHARD}. */
  public String streamKey() {
    return streamKey;
  }

  /** For {@link Reason#BELOW_RETENTION}: the oldest entry the stream retains, or null when it retains none. */
  public String oldestRetainedId() {
    return oldestRetainedId;
  }
}
