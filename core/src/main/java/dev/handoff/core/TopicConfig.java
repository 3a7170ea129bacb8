package dev.handoff.core;

import dev.handoff.core.internal.Settings;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a topic is laid out and bounded. The producers' {@code Outbox} and the relay must agree on {@code shards}.
 *
 * @param name the topic: 1 to 100 characters of letters, digits, {@code .}, {@code _} and {@code -}, starting with a
 *     letter or digit; it becomes part of Redis keys and never contains the hash-tag braces
 * @param shards the number of streams the topic is split into (default 1); messages with the same key always go to
 *     the same shard, which is what keeps their order
 * @param capacity what an append does when the topic's backlog is full (default {@link CapacityPolicy#standard()}:
 *     wait up to 1 s once 1,000,000 rows are unpublished, then {@code OutboxFullException})
 */
public record TopicConfig(String name, int shards, CapacityPolicy capacity) {

  /** The pattern every topic name matches. */
  public static final Pattern NAME_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");

  /** The largest number of shards a topic may have. */
  public static final int MAX_SHARDS = 1024;

  public TopicConfig {
    requireValidName(name);
    if (shards < 1 || shards > MAX_SHARDS) {
      throw new IllegalArgumentException(
          "shards of topic '" + name + "' must be between 1 and " + MAX_SHARDS + ", was " + shards);
    }
    Objects.requireNonNull(capacity, "capacity");
  }

  /** One shard, the {@link CapacityPolicy#standard() standard} capacity. */
  public static TopicConfig of(String name) {
    return new TopicConfig(name, 1, CapacityPolicy.standard());
  }

  public TopicConfig withShards(int shards) {
    return new TopicConfig(name, shards, capacity);
  }

  public TopicConfig withCapacity(CapacityPolicy capacity) {
    return new TopicConfig(name, shards, capacity);
  }

  /**
   * Returns {@code topic} if it is a valid topic name.
   *
   * @throws InvalidMessageException naming the field {@code topic} otherwise
   */
  public static String requireValidName(String topic) {
    if (topic == null || !NAME_PATTERN.matcher(topic).matches()) {
      throw new InvalidMessageException(
          "topic",
          "topic must match " + NAME_PATTERN.pattern() + ", was "
              + (topic == null ? "null" : "'" + Settings.abbreviate(topic) + "'"));
    }
    return topic;
  }
}
