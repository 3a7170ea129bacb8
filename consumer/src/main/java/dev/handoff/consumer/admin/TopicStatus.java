package dev.handoff.consumer.admin;

import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.Transport;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The whole path of one topic at one moment, as {@link TopicInspector} reads it from PostgreSQL and Redis: per shard
 * the producer side (outbox depth, oldest unpublished row), the relay's lease and the stream (or list); per consumer
 * group its own status. The numbers answer different questions and are never folded into one: outbox depth is work
 * committed and not published, backlog is published and never delivered to a group, pending is delivered and not
 * acknowledged.
 *
 * <p>The per-group figures are each group's {@link ConsumerStatus} (streams) or {@link ListStatus} (lists), read the
 * way the group's own consumers read them; their {@code duplicatesSkipped} and {@code paused} are a consumer
 * instance's own and are always 0 and empty here.
 *
 * @param topic the topic
 * @param at when it was read
 * @param transports the transports that have keys in Redis for the topic (empty when nothing was published yet)
 * @param shards one entry per shard, shard 0 first
 * @param streamGroups each consumer group of the topic's streams, by name
 * @param listGroups each group of the topic's lists, by name; on lists a group is the inbox scope, known from the
 *     dead letters or from the name asked for, and a list topic with no known group is reported once as group
 *     {@code *} (its dead letters then 0)
 */
public record TopicStatus(String topic, Instant at, Set<Transport> transports, List<ShardStatus> shards,
    List<ConsumerStatus> streamGroups, List<ListStatus> listGroups) {

  public TopicStatus {
    transports = Set.copyOf(transports);
    shards = List.copyOf(shards);
    streamGroups = List.copyOf(streamGroups);
    listGroups = List.copyOf(listGroups);
  }

  /** Committed outbox rows of the topic not yet published, over all shards. */
  public long outboxDepth() {
    return shards.stream().mapToLong(ShardStatus::outboxDepth).sum();
  }

  /** How long the oldest unpublished row of any shard has waited, or {@code null} when none waits. */
  public Duration oldestUnpublishedAge() {
    return shards.stream().map(ShardStatus::oldestUnpublishedAge).filter(d -> d != null).max(Duration::compareTo)
        .orElse(null);
  }

  /**
   * One shard's producer and relay side.
   *
   * @param shard the shard number
   * @param outboxDepth committed rows of the shard not yet published
   * @param oldestUnpublishedAge how long ago the oldest of them was committed, or {@code null}
   * @param lease the relay's lease on the shard, as the database holds it; never {@code null}
   * @param stream the shard's stream in Redis; never {@code null}
   * @param slot on a Redis Cluster, the hash slot of the shard's keys (all of them are in one); -1 on one server
   * @param node on a Redis Cluster, the master that serves the slot ({@code host:port}) when read; {@code null} on
   *     one server
   * @param pausedSince when a relay stopped publishing the shard after finding that the database went back in time
   *     ({@code pauseOnDatabaseRewind}), until {@code handoff resume}; {@code null} while it publishes
   */
  public record ShardStatus(int shard, long outboxDepth, Duration oldestUnpublishedAge, Lease lease, Stream stream,
      int slot, String node, Instant pausedSince) {

    public ShardStatus {
      Objects.requireNonNull(lease, "lease");
      Objects.requireNonNull(stream, "stream");
    }

    /**
     * A shard's relay lease.
     *
     * @param owner the relay that holds or last held the lease, or {@code null} if none ever did
     * @param epoch the lease's fencing epoch (incremented at each takeover); 0 without a lease row
     * @param expiresAt when the lease runs out unless renewed, or {@code null} without a lease row
     * @param live whether the lease had not run out when read (by the database's clock)
     */
    public record Lease(String owner, long epoch, Instant expiresAt, boolean live) {}

    /**
     * A shard's stream.
     *
     * @param key the stream key
     * @param exists whether the stream exists in Redis
     * @param length {@code XLEN}: entries retained, whatever their state
     * @param firstEntryId the oldest retained entry, or {@code null}
     * @param firstEntryAge how long ago that entry was added (from its ID), or {@code null}
     * @param lastEntryId the newest entry, or {@code null}
     * @param lastEntryAge how long ago that entry was added, or {@code null}
     */
    public record Stream(String key, boolean exists, long length, String firstEntryId, Duration firstEntryAge,
        String lastEntryId, Duration lastEntryAge) {}
  }
}
