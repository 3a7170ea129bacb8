package dev.handoff.outbox;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.outbox.internal.micrometer.MeteredOutbox;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/** Builds an {@link Outbox}. Not thread-safe; the built outbox is. */
public final class OutboxBuilder {

  /** The largest payload accepted by default: 1 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  /** The largest headers accepted by default: 8 KiB of JSON. */
  public static final int DEFAULT_MAX_HEADER_BYTES = 8 << 10;

  /** How old the cached depth of a bounded topic may be by default. */
  public static final Duration DEFAULT_DEPTH_REFRESH_INTERVAL = Duration.ofMillis(250);

  /** How often a waiting append looks at the depth again by default. */
  public static final Duration DEFAULT_CAPACITY_POLL_INTERVAL = Duration.ofMillis(50);

  private String schema = SchemaNames.DEFAULT_SCHEMA;
  private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
  private int maxHeaderBytes = DEFAULT_MAX_HEADER_BYTES;
  private final Map<String, TopicConfig> topics = new LinkedHashMap<>();
  private Duration depthRefreshInterval = DEFAULT_DEPTH_REFRESH_INTERVAL;
  private Duration capacityPollInterval = DEFAULT_CAPACITY_POLL_INTERVAL;
  private Clock clock = Clock.systemUTC();
  private MeterRegistry meterRegistry;

  OutboxBuilder() {}

  /** The schema holding handoff's tables. Defaults to {@code handoff}. */
  public OutboxBuilder schema(String schema) {
    this.schema = schema;
    return this;
  }

  /** The largest payload accepted, in bytes. Defaults to 1 MiB. */
  public OutboxBuilder maxPayloadBytes(int maxPayloadBytes) {
    this.maxPayloadBytes = maxPayloadBytes;
    return this;
  }

  /** The largest headers accepted, in bytes of their JSON encoding. Defaults to 8 KiB. */
  public OutboxBuilder maxHeaderBytes(int maxHeaderBytes) {
    this.maxHeaderBytes = maxHeaderBytes;
    return this;
  }

  /**
   * Settings for one topic (shards, capacity). Topics not configured get one shard and the
   * {@link CapacityPolicy#standard() standard} capacity.
   */
  public OutboxBuilder topic(TopicConfig topic) {
    Objects.requireNonNull(topic, "topic");
    topics.put(topic.name(), topic);
    return this;
  }

  /** How old the cached depth of a bounded topic may get. Defaults to 250 ms. */
  public OutboxBuilder depthRefreshInterval(Duration interval) {
    this.depthRefreshInterval = interval;
    return this;
  }

  /** How often an append that waits for capacity looks again. Defaults to 50 ms. */
  public OutboxBuilder capacityPollInterval(Duration interval) {
    this.capacityPollInterval = interval;
    return this;
  }

  /** The clock for message IDs and deadlines. Defaults to the system UTC clock. */
  public OutboxBuilder clock(Clock clock) {
    this.clock = clock;
    return this;
  }

  /**
   * Counts appended messages ({@code handoff.outbox.appended}) and messages a capacity policy refused
   * ({@code handoff.outbox.refused}) per {@code topic} in {@code registry} (Micrometer, an optional dependency:
   * without this call the outbox needs none of it). Appends are counted, not commits. The outbox's depth and its
   * oldest unpublished row's age are the relay's gauges ({@code RelayBuilder.meterRegistry}), since the outbox
   * runs no query of its own. Defaults to no metrics.
   */
  public OutboxBuilder meterRegistry(MeterRegistry registry) {
    this.meterRegistry = Objects.requireNonNull(registry, "meterRegistry");
    return this;
  }

  /**
   * Validates the settings and builds the outbox.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   */
  public Outbox build() {
    Outbox outbox = Outbox.create(new OutboxConfig(
        schema, maxPayloadBytes, maxHeaderBytes, topics, depthRefreshInterval, capacityPollInterval, clock));
    return meterRegistry == null ? outbox : new MeteredOutbox(outbox, meterRegistry);
  }
}
