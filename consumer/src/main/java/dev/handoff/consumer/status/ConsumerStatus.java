package dev.handoff.consumer.status;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A snapshot of one consumer group on one topic. The numbers answer different questions and are never folded
 * together: <b>backlog</b> is work the group has not been handed yet, <b>pending</b> is work handed to a consumer
 * and not acknowledged yet. {@code XPENDING} shows only the second; a group can have zero pending entries while
 * thousands were never delivered.
 *
 * @param group the consumer group
 * @param topic the topic
 * @param streams one entry per shard
 * @param deadLetters dead letters of this group still in status {@code dead} (from the database)
 * @param duplicatesSkipped duplicates this consumer instance skipped since it was built (not persisted)
 * @param paused this instance's workers paused by a failure of the environment, with their reasons (not persisted)
 * @param orderedShards a group ordered per shard: each shard's owner, epoch, position and blocking message, from the
 *     database, in shard order; empty for an unordered group
 */
public record ConsumerStatus(String group, String topic, List<StreamStatus> streams, long deadLetters,
    long duplicatesSkipped, List<PausedWorker> paused, List<OrderedShard> orderedShards) implements GroupStatus {

  public ConsumerStatus {
    streams = List.copyOf(streams);
    paused = List.copyOf(paused);
    orderedShards = List.copyOf(orderedShards);
  }

  /** Never-delivered entries over all shards (a lower bound when some shard's count is not exact). */
  public long backlog() {
    return streams.stream().mapToLong(StreamStatus::backlog).sum();
  }

  /** Delivered but unacknowledged entries over all shards. */
  public long pending() {
    return streams.stream().mapToLong(s -> s.pending().count()).sum();
  }

  /** Whether the group has nothing left to do: no backlog and nothing pending on any shard. */
  public boolean drained() {
    return streams.stream().allMatch(s -> s.backlog() == 0 && s.backlogExact() && s.pending().count() == 0);
  }

  /**
   * The state of the group on one stream.
   *
   * @param streamKey the stream
   * @param exists whether the stream key exists
   * @param groupExists whether the group exists on it
   * @param length {@code XLEN}: entries retained in the stream, whatever their state
   * @param firstEntryId the oldest retained entry, or {@code null} when the stream is empty
   * @param lastEntryId the newest retained entry, or {@code null}
   * @param lastDeliveredId the group's last-delivered ID, or {@code null} without a group
   * @param backlog entries after {@code lastDeliveredId}: never delivered to any consumer of the group. Counted
   *     exactly with a server-side {@code XRANGE (lastDeliveredId + COUNT} scan (tombstones cannot distort it,
   *     unlike 7.0's {@code lag}), up to a limit beyond which it is a lower bound
   * @param backlogExact whether {@code backlog} is exact (false when the scan limit was reached)
   * @param pending the entries delivered and not acknowledged; never {@code null}
   */
  public record StreamStatus(
      String streamKey,
      boolean exists,
      boolean groupExists,
      long length,
      String firstEntryId,
      String lastEntryId,
      String lastDeliveredId,
      long backlog,
      boolean backlogExact,
      Pending pending) {

    public StreamStatus {
      Objects.requireNonNull(pending, "pending");
    }

    /**
     * The entries of one stream delivered to the group and not acknowledged yet.
     *
     * @param count delivered and not acknowledged ({@code XPENDING} total)
     * @param oldestId the lowest pending ID, or {@code null}
     * @param oldestAge how long ago the oldest pending entry was added to the stream (from its ID), or {@code null}
     * @param consumers pending count per consumer that has pending entries
     * @param deliveryHistogram delivery count to number of pending entries with that count (scanned up to the limit)
     */
    public record Pending(
        long count,
        String oldestId,
        Duration oldestAge,
        Map<String, Long> consumers,
        SortedMap<Long, Long> deliveryHistogram) {

      public Pending {
        consumers = Map.copyOf(consumers);
        deliveryHistogram = Collections.unmodifiableSortedMap(new TreeMap<>(deliveryHistogram));
      }
    }
  }
}
