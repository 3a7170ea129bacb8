package dev.handoff.consumer;

import dev.handoff.consumer.internal.DefaultTopicInspector;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.migrations.SchemaNames;
import dev.handoff.outbox.RedisConnectionSpec;
import dev.handoff.outbox.StreamFormat;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Reads the status of any topic, its shards and its consumer groups, from the database and Redis, without taking
 * part in anything: no group is created, no consumer registered, nothing read from a group. For dashboards, the
 * operator's {@code handoff status} command and tests.
 *
 * <pre>{@code
 * try (TopicInspector inspector = TopicInspector.builder(dataSource, RedisConnectionSpec.of(RedisUrl.parse(url)))
 *     .build()) {
 *   for (String topic : inspector.topics()) {
 *     TopicStatus status = inspector.status(topic);
 *   }
 * }
 * }</pre>
 *
 * <p><b>Discovery.</b> A topic is known from its relay leases ({@code relay_lease} rows for this key prefix) and from
 * its keys in Redis ({@code SCAN} for {@code <prefix>:{<topic>:<shard>}...}); its shards are the union of both and
 * of the shards with unpublished rows. Stream groups come from {@code XINFO GROUPS} on every shard; list groups from
 * the dead letters of the topic, since a list has no group in Redis.
 *
 * <p><b>Cost.</b> Per shard a few O(1) Redis calls and per group the bounded scans of {@link StreamConsumer#status()}
 * (up to {@code statusScanLimit} entries); two grouped queries on the outbox's partial index of unpublished rows.
 * A {@code SCAN} of the key space runs once per call of {@link #topics()} or {@link #status(String)}.
 *
 * <p>Thread-safe. {@link #close()} closes its Redis connections, not the data source.
 */
public interface TopicInspector extends AutoCloseable {

  /** Starts a builder for an inspector of the topics in {@code dataSource} and the Redis server of {@code redis}. */
  static Builder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new Builder(dataSource, redis);
  }

  /** The topics found in the database and in Redis for this key prefix, by name. */
  List<String> topics();

  /** The status of {@code topic} and of all its groups. A topic that is known nowhere has no shard. */
  TopicStatus status(String topic);

  /** The status of {@code topic} and of {@code group} alone ({@code null}: all groups). */
  TopicStatus status(String topic, String group);

  /** Closes the Redis connections. */
  @Override
  void close();

  /** Settings of an inspector; not thread-safe, {@link #build()} copies them. */
  final class Builder {

    private final DataSource dataSource;
    private final RedisConnectionSpec redis;
    private String schema = HandoffMigrations.DEFAULT_SCHEMA;
    private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
    private int statusScanLimit = StreamConsumerBuilder.DEFAULT_STATUS_SCAN_LIMIT;

    private Builder(DataSource dataSource, RedisConnectionSpec redis) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.redis = Objects.requireNonNull(redis, "redis");
    }

    /** The schema of handoff's tables; default {@code handoff}. */
    public Builder schema(String schema) {
      this.schema = SchemaNames.requireValid(schema);
      return this;
    }

    /** The Redis key prefix; default {@code handoff}. */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = StreamFormat.requireValidKeyPrefix(keyPrefix);
      return this;
    }

    /** Entries counted per stream and group before a backlog is reported as a lower bound; default as consumers. */
    public Builder statusScanLimit(int limit) {
      if (limit < 1) {
        throw new IllegalArgumentException("statusScanLimit must be at least 1, was " + limit);
      }
      this.statusScanLimit = limit;
      return this;
    }

    /** Builds the inspector; it connects to Redis on first use. */
    public TopicInspector build() {
      return new DefaultTopicInspector(dataSource, redis, schema, keyPrefix, statusScanLimit);
    }
  }
}
