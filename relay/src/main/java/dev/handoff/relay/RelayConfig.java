package dev.handoff.relay;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.Settings;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The settings of a {@link Relay}, validated and immutable, in groups of what is tuned together. Built by
 * {@link RelayBuilder}, which documents the defaults. The relay's collaborators (its listener, clock, fault hooks,
 * meter registry) are not settings: the builder takes them apart.
 *
 * @param schema the schema holding handoff's tables
 * @param keyPrefix the prefix of every Redis key (streams are {@code <prefix>:{<topic>:<shard>}}, lists
 *     {@code <prefix>:{<topic>:<shard>}:list})
 * @param topics the topics this relay publishes, with their shard counts
 * @param owner this relay's name in leases; unique per live process
 * @param transport streams (the default) or lists; see {@link Transport}
 * @param publishing how much the relay takes at once, and how often it looks when nothing tells it of new rows
 * @param leases how long a shard stays this relay's without renewal, and how long a close waits for its work
 * @param retention how long published rows are kept, and how the maintenance that purges them runs
 * @param trimming how the relay trims streams behind their consumer groups
 * @param checks the relay's checks of its shards: an old backlog, a database that went back in time
 */
public record RelayConfig(
    String schema,
    String keyPrefix,
    List<TopicConfig> topics,
    String owner,
    Transport transport,
    Publishing publishing,
    Leases leases,
    Retention retention,
    Trimming trimming,
    Checks checks) {

  public RelayConfig {
    SchemaNames.requireValid(schema);
    StreamFormat.requireValidKeyPrefix(keyPrefix);
    topics = List.copyOf(topics);
    if (topics.isEmpty()) {
      throw new IllegalArgumentException("topics must name at least one topic");
    }
    if (topics.stream().map(TopicConfig::name).distinct().count() != topics.size()) {
      throw new IllegalArgumentException("topics must not repeat a topic, was " + topics);
    }
    if (owner == null || owner.isBlank() || owner.length() > 200) {
      throw new IllegalArgumentException("owner must be 1 to 200 characters, was " + owner);
    }
    Objects.requireNonNull(transport, "transport");
    Objects.requireNonNull(publishing, "publishing");
    Objects.requireNonNull(leases, "leases");
    Objects.requireNonNull(retention, "retention");
    Objects.requireNonNull(trimming, "trimming");
    Objects.requireNonNull(checks, "checks");
  }

  /** Every shard of every configured topic, in topic and shard order. */
  public List<ShardId> shards() {
    return topics.stream()
        .flatMap(t -> java.util.stream.IntStream.range(0, t.shards()).mapToObj(s -> new ShardId(t.name(), s)))
        .toList();
  }

  /**
   * How much the relay takes at once, and how often it looks for rows on its own.
   *
   * @param minBatchSize the smallest batch of rows assigned at once
   * @param maxBatchSize the largest batch of rows assigned at once
   * @param maxBatchBytes the largest total payload sent to Redis in one call
   * @param idlePollInterval the longest wait between looks at the outbox when no notification arrives
   * @param listCapacity with {@link Transport#LIST}: the most elements a shard's list and its consumers' processing
   *     lists hold together; the relay stops pushing there and the outbox holds the rest
   */
  public record Publishing(int minBatchSize, int maxBatchSize, int maxBatchBytes, Duration idlePollInterval,
      int listCapacity) {

    public Publishing {
      if (minBatchSize < 1 || maxBatchSize < minBatchSize || maxBatchSize > 10_000) {
        throw new IllegalArgumentException("batch sizes must satisfy 1 <= minBatchSize <= maxBatchSize <= 10000,"
            + " were " + minBatchSize + " and " + maxBatchSize);
      }
      if (maxBatchBytes < 1024) {
        throw new IllegalArgumentException("maxBatchBytes must be at least 1024, was " + maxBatchBytes);
      }
      Settings.requirePositive("idlePollInterval", idlePollInterval);
      if (listCapacity < 1) {
        throw new IllegalArgumentException("listCapacity must be positive, was " + listCapacity);
      }
    }
  }

  /**
   * How long a shard stays this relay's, and how long a close waits before giving it back.
   *
   * @param ttl how long a lease lasts without renewal; a dead relay's shards are taken over after this
   * @param drainTimeout how long {@link Relay#close()} waits for assigned rows to be published
   */
  public record Leases(Duration ttl, Duration drainTimeout) {

    public Leases {
      Settings.requirePositive("leaseTtl", ttl);
      if (ttl.toMillis() < 300) {
        throw new IllegalArgumentException("leaseTtl must be at least 300 ms, was " + ttl);
      }
      Settings.requirePositive("drainTimeout", drainTimeout);
    }
  }

  /**
   * How long published rows are kept, and how the maintenance that purges them (and trims the streams) runs.
   *
   * @param outboxRetention how long published rows are kept, for replay and repair
   * @param batchSize rows deleted per retention statement
   * @param maintenanceInterval how often a maintenance run starts (stream trims, watermarks, outbox purge), busy or
   *     not; a run that takes longer is followed by the next at once
   * @param budget how long one maintenance run may take in all, run in slices of at most 50 ms between publish
   *     cycles; past it the run stops and reports what is left
   */
  public record Retention(Duration outboxRetention, int batchSize, Duration maintenanceInterval, Duration budget) {

    public Retention {
      Settings.requirePositive("outboxRetention", outboxRetention);
      if (batchSize < 1) {
        throw new IllegalArgumentException("retentionBatchSize must be positive, was " + batchSize);
      }
      Settings.requirePositive("maintenanceInterval", maintenanceInterval);
      Settings.requirePositive("retentionBudget", budget);
    }
  }

  /**
   * How the relay trims streams behind their consumer groups.
   *
   * @param enabled whether the relay trims streams at all; off, every entry stays (Redis memory grows with every
   *     message), for demos and tests that replay a whole stream through a group
   * @param limit the most stream entries evicted per trim call (each call is one bounded Redis command; a trim
   *     repeats calls until caught up)
   * @param slack how many entries a stream may gain after its last trim before it is trimmed again right after
   *     publishing: in steady state a stream holds what some group has not finished plus at most about this many
   *     (plus Redis's stream node size, {@code stream-node-max-entries}, 100 by default)
   * @param margin how long an entry stays in its stream after every group finished it; {@link Duration#ZERO} (the
   *     default) trims as soon as every group finished
   */
  public record Trimming(boolean enabled, int limit, int slack, Duration margin) {

    public Trimming {
      if (limit < 1) {
        throw new IllegalArgumentException("trimLimit must be positive, was " + limit);
      }
      if (slack < 1) {
        throw new IllegalArgumentException("trimSlack must be positive, was " + slack);
      }
      if (margin == null || margin.isNegative()) {
        throw new IllegalArgumentException("trimMargin must be zero or positive, was " + margin);
      }
    }
  }

  /**
   * The relay's checks of its shards.
   *
   * @param backlogAgeThreshold {@link Relay#health()} reports {@code backlog-old} when the oldest unpublished row of
   *     a configured topic is older than this; {@link Duration#ZERO} (the default) turns the check off
   * @param pauseOnDatabaseRewind whether the relay stops publishing a shard when it finds that the database went
   *     back in time, until an operator runs {@code handoff resume}; false (the default) goes on publishing
   */
  public record Checks(Duration backlogAgeThreshold, boolean pauseOnDatabaseRewind) {

    public Checks {
      Objects.requireNonNull(backlogAgeThreshold, "backlogAgeThreshold");
      if (backlogAgeThreshold.isNegative()) {
        throw new IllegalArgumentException("backlogAgeThreshold must not be negative, was " + backlogAgeThreshold);
      }
    }
  }
}
