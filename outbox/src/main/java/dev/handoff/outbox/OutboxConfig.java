package dev.handoff.outbox;

import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.Settings;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The settings of an {@link Outbox}, validated and immutable. Built by {@link OutboxBuilder}.
 *
 * @param schema the schema holding handoff's tables
 * @param maxPayloadBytes the largest payload accepted
 * @param maxHeaderBytes the largest accepted size of the headers, measured as their JSON encoding in UTF-8
 * @param topics per-topic settings; topics not listed get one shard and no capacity bound
 * @param depthRefreshInterval how old the cached count of unpublished rows may be before a capacity check
 *     counts again
 * @param capacityPollInterval how often a waiting append looks at the depth again
 * @param clock the source of time for message IDs and deadlines
 */
public record OutboxConfig(
    String schema,
    int maxPayloadBytes,
    int maxHeaderBytes,
    Map<String, TopicConfig> topics,
    Duration depthRefreshInterval,
    Duration capacityPollInterval,
    Clock clock) {

  public OutboxConfig {
    SchemaNames.requireValid(schema);
    if (maxPayloadBytes < 1) {
      throw new IllegalArgumentException("maxPayloadBytes must be positive, was " + maxPayloadBytes);
    }
    if (maxHeaderBytes < 2) {
      throw new IllegalArgumentException("maxHeaderBytes must be at least 2, was " + maxHeaderBytes);
    }
    topics = Map.copyOf(topics);
    Settings.requirePositive("depthRefreshInterval", depthRefreshInterval);
    Settings.requirePositive("capacityPollInterval", capacityPollInterval);
    Objects.requireNonNull(clock, "clock");
  }

  /** The settings of {@code topic}: the configured ones, or one unbounded shard. */
  public TopicConfig topic(String topic) {
    TopicConfig config = topics.get(topic);
    return config != null ? config : TopicConfig.of(topic);
  }
}
