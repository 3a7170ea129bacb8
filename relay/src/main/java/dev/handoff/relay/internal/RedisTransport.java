package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.StreamId;
import java.util.Arrays;
import java.util.List;

/**
 * The Redis side of the relay: where a shard's rows go and how. One lease, fencing and batch mechanism
 * ({@link DefaultRelay}) drives either implementation: {@link RedisStreams} (XADD with explicit IDs) or
 * {@link RedisLists} (RPUSH behind a last-pushed marker, up to a capacity).
 */
interface RedisTransport {

  /** What happened to each row of a batch. */
  enum EntryStatus {
    /** Written now. */
    ADDED,
    /** Already there from an earlier attempt: counts as published. */
    ALREADY_PRESENT,
    /** Its ID is taken by another message (streams only): the row gets a fresh ID. */
    PRESENT_WITH_OTHER_MESSAGE,
    /** Refused and absent (streams only): the row gets a fresh ID. */
    REFUSED_ABSENT,
    /** Not written because the target is full (lists only): the row stays in the outbox for a later attempt. */
    NOT_SENT;

    /** Whether Redis refused the row's ID: the row is re-queued with a fresh one. */
    boolean refused() {
      return this == PRESENT_WITH_OTHER_MESSAGE || this == REFUSED_ABSENT;
    }
  }

  /** The reply of a publish: {@code lost} when Redis no longer holds what the relay added before. */
  record PublishResult(boolean lost, long entriesAdded, List<EntryStatus> statuses) {}

  /**
   * The outcome of one trim call: {@code minId} is the point below which every consumer has finished ("" when
   * unknown), {@code evicted} what was trimmed, {@code groups} whether {@code minId} may be stored as the
   * watermark (above zero), {@code holder} the group whose unfinished entries set {@code minId} ("" when none or
   * unknown), {@code length} what the stream or list holds after the call.
   */
  record TrimResult(String minId, long evicted, long groups, String holder, long length) {}

  /** The key the shard's rows are written to. */
  String key(String keyPrefix, ShardId shard);

  /** The relay's bookkeeping key beside {@code key} (same hash slot). */
  String relayKey(String key);

  /** How many more rows the target accepts now; {@link Long#MAX_VALUE} when it is unbounded. */
  long room(String key, String relayKey);

  /** Whether {@link #room} can be below {@link Long#MAX_VALUE}, and then costs a round trip to Redis. */
  boolean bounded();

  /**
   * Writes the rows, in order, unless Redis lost what the relay wrote before (its own count of added entries is
   * below {@code confirmedAdded}); with no rows it only checks for that loss.
   */
  PublishResult publish(String key, String relayKey, long confirmedAdded, List<OutboxRow> rows);

  /** One batch for {@link #publishAll}: the arguments of a {@link #publish}. */
  record Publish(String key, String relayKey, long confirmedAdded, List<OutboxRow> rows) {}

  /**
   * Writes several batches, each as {@link #publish} would, in one round trip where the transport can. An entry is
   * null where that write did not complete (a connection or a node failed, the script was not loaded, Redis refused
   * it): the caller then sends that batch with {@link #publish}, which is safe, as a write that ran finds its
   * entries present. This default completes none.
   */
  default List<PublishResult> publishAll(List<Publish> batches) {
    return Arrays.asList(new PublishResult[batches.size()]);
  }

  /** The highest ID ever written to {@code key}, or zero; a new lease owner never assigns at or below it. */
  StreamId lastGeneratedId(String key, String relayKey);

  /**
   * After a partial loss (the key exists, with fewer entries than the relay confirmed), the lowest ID the key may
   * still lack: its first entry, or just above its last generated ID when it is empty. Everything below it was
   * trimmed, and trims only take what every consumer finished. {@link StreamId#ZERO} when the key is gone or the
   * transport cannot tell, so that every retained row goes again.
   */
  default StreamId survivingFloor(String key, String relayKey) {
    return StreamId.ZERO;
  }

  /**
   * After a partial loss, the ID from which the key may lack entries: its last entry (which it holds, so that the
   * row sent again is found), or just above its last generated ID when it is empty. A copy that lost the last writes
   * (a replica promoted before it had them, a restart from an older snapshot) is a prefix of the relay's history:
   * everything below its last entry is there, or was trimmed after every consumer finished it.
   * {@link StreamId#ZERO} when the key is gone or the transport cannot tell, so that every retained row goes again.
   */
  default StreamId survivingTop(String key, String relayKey) {
    return StreamId.ZERO;
  }

  /** {@code used_memory} and {@code maxmemory} of the server ({@code INFO memory}); -1 for what is unknown. */
  long[] memory();

  /**
   * Trims what every consumer finished, and reports the watermark; {@code noGroupFloor} is the retention cut, and
   * nothing at or above {@code keepFrom} is trimmed (the trim margin; null for none).
   */
  TrimResult trim(String key, String relayKey, StreamId noGroupFloor, StreamId keepFrom, int limit);
}
