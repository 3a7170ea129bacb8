package dev.handoff.consumer.admin;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.consumer.internal.DefaultTopicInspector;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.SchemaNames;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
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
 * <p>Thread-safe. {@link #close()} closes its Redis connections, not the data source. {@link #status} holds two
 * connections of the data source at once (the topic's reads and a group's dead-letter count): a pool of one would
 * wait for its own connection.
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

  /**
   * What a database failover left in {@code topic}'s streams, for the operator's {@code handoff failover-report}.
   * Reads every entry the streams retain, in pages of 500, and looks each page up in this database's outbox and its
   * purge log, one statement per page: an operator's command, not a probe (it is not part of {@link #status}). An
   * entry whose message has neither an outbox row (with its outbox id and message ID) nor a purge that accounts for
   * it is a <b>ghost</b>: the database lost the commit that appended it. A message ID the stream holds more than once
   * was <b>published twice</b>: the database lost the record that it had been published, and the relay published
   * it again (an inbox makes the second copy a duplicate). Lists are not read: a list keeps no history.
   *
   * @param listLimit how many message IDs of each kind to list per stream; the counts are exact
   */
  FailoverReport failoverReport(String topic, int listLimit);

  /**
   * What {@link #failoverReport} found.
   *
   * @param topic the topic
   * @param streams one per shard whose stream exists, in shard order
   */
  record FailoverReport(String topic, List<StreamFindings> streams) {

    public FailoverReport {
      streams = List.copyOf(streams);
    }

    /** Whether no stream holds a ghost or a message published twice. */
    public boolean clean() {
      return streams.stream().allMatch(s -> s.ghosts() == 0 && s.publishedTwice() == 0);
    }

    /**
     * One stream's findings.
     *
     * @param shard the shard
     * @param streamKey the stream's key
     * @param entries how many entries were read (all the stream retains)
     * @param ghosts how many entries are ghosts
     * @param ghostIds the message IDs of the first ghosts, in stream order, up to the list limit
     * @param publishedTwice how many message IDs the stream holds more than once
     * @param publishedTwiceIds the first of those message IDs, up to the list limit
     */
    public record StreamFindings(int shard, String streamKey, long entries, long ghosts, List<UUID> ghostIds,
        long publishedTwice, List<UUID> publishedTwiceIds) {

      public StreamFindings {
        ghostIds = List.copyOf(ghostIds);
        publishedTwiceIds = List.copyOf(publishedTwiceIds);
      }
    }
  }

  /** Closes the Redis connections. */
  @Override
  void close();

  /** Settings of an inspector; not thread-safe, {@link #build()} copies them. */
  final class Builder {

    private final DataSource dataSource;
    private final RedisConnectionSpec redis;
    private String schema = SchemaNames.DEFAULT_SCHEMA;
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
