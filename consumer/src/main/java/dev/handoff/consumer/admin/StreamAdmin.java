package dev.handoff.consumer.admin;

import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.internal.StreamRewinder;
import dev.handoff.consumer.internal.StreamTrimmer;
import dev.handoff.consumer.internal.TopicShards;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.RedisClients;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.StreamTrimScript;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * An operator's tools for a topic's streams, without a handler and without joining a group: set a group back
 * ({@link #rewind}) and trim what every group finished ({@link #trim}). Both find the topic's shards themselves:
 * its {@code relay_lease} rows when a {@link Builder#dataSource DataSource} is given, else the stream keys present
 * in Redis ({@code SCAN}; a single Redis, not a cluster).
 *
 * <p>Thread-safe. It owns its connections to the {@link RedisConnectionSpec} it was built on, and {@link #close}
 * ends them.
 */
public final class StreamAdmin implements AutoCloseable {

  /** The default of {@link Builder#countLimit}. */
  public static final int DEFAULT_COUNT_LIMIT = 10_000;

  private final UnifiedJedis redis;
  private final TopicShards shards;
  private final StreamRewinder rewinder;
  private final StreamTrimmer trimmer;

  private StreamAdmin(Builder b) {
    this.redis = RedisClients.open(b.spec, 2, Duration.ofSeconds(5), "handoff-admin");
    this.shards = new TopicShards(redis, b.keyPrefix, b.dataSource, b.schema);
    this.rewinder = new StreamRewinder(redis, b.keyPrefix, b.countLimit);
    this.trimmer = new StreamTrimmer(redis, b.keyPrefix, b.countLimit, StreamTrimScript.DEFAULT_LIMIT);
  }

  /** An admin that opens its own connections to {@code redis}. */
  public static Builder builder(RedisConnectionSpec redis) {
    return new Builder(Objects.requireNonNull(redis, "redis"));
  }

  /**
   * The topic's shards, lowest first: its {@code relay_lease} rows, or without a database (or without rows) the
   * streams present in Redis; empty when neither knows the topic.
   */
  public List<Integer> shards(String topic) {
    return shards.of(TopicConfig.requireValidName(topic));
  }

  /**
   * Sets {@code group} back on every shard of {@code topic} (or the one {@link RewindTarget#onShard} names) so that
   * the entries at or after {@code to} come again. On a shard where the group has not read up to {@code to}, it is
   * left as it is (setting it there would skip its backlog). The plan counts, per shard, the entries that come
   * again: those the stream retains from {@code to} to the group's last-delivered ID, counted exactly up to
   * {@link Builder#countLimit} ("at least" past it).
   *
   * <p>Each shard is checked and set in one atomic script; every shard is checked before any is set; a shard that
   * refuses at the set (trimmed in between) has the shards already set put back. Pending entries stay pending: a
   * rewound entry that is pending is delivered again to whichever consumer reads it, its delivery count starting
   * at 1 again. The group's {@code entries-read} is set so that its lag is what it will read from the new position
   * (when both counts are exact; otherwise Redis estimates it or reports it unknown). Messages that come again are
   * duplicates to a consumer whose inbox still holds their markers: their effects do not run twice.
   *
   * @param dryRun true to compute the plan and change nothing
   * @throws RewindRefusedException nothing changed on any shard: a shard's stream no longer holds entries at or
   *     after {@code to} (it was trimmed or had entries deleted below its oldest one; replay older history with
   *     {@link HandoffConsumer#replayFromOutbox}), or a stream or the group is missing, or the topic has no shard
   */
  public RewindPlan rewind(String topic, String group, RewindTarget to, boolean dryRun) {
    Objects.requireNonNull(to, "to");
    if (group == null || group.isBlank()) {
      throw new IllegalArgumentException("group must not be blank");
    }
    List<Integer> of = shards(topic);
    if (of.isEmpty()) {
      throw noShard("rewind of group '" + group + "'", topic);
    }
    return rewinder.rewind(topic, of, group, to, dryRun);
  }

  /** {@link #trim(String, boolean, Consumer)} without progress lines. */
  public TrimReport trim(String topic, boolean dryRun) {
    return trim(topic, dryRun, s -> {});
  }

  /**
   * Trims every stream of {@code topic} below what all its groups finished: the lowest of each group's
   * last-delivered ID and oldest pending ID, computed by the relay's own trim script, and reports per shard and per
   * group what is still held (backlog, pending, oldest pending) and how many entries were removed. Safe while
   * relays and consumers run: each trim call reads the groups and trims in one atomic step, so it removes only what
   * every group had finished at that instant, as the relay's own maintenance does. A stream without a group is not
   * trimmed (no group finished anything; the relay keeps such a stream for its outbox retention). The relay's
   * stored watermark is not raised by this trim (the relay raises it under its lease at its next maintenance);
   * after a Redis data loss the relay then publishes from the older watermark, which the inboxes absorb.
   *
   * @param dryRun true to report the trim point and the entries below it, removing nothing
   * @param progress called with each shard's outcome as it is done
   * @throws RewindRefusedException with {@link RewindRefusedException.Reason#NO_SHARD} when the topic has no shard
   */
  public TrimReport trim(String topic, boolean dryRun, Consumer<TrimReport.Shard> progress) {
    List<Integer> of = shards(topic);
    if (of.isEmpty()) {
      throw noShard("trim", topic);
    }
    return trimmer.trim(topic, of, dryRun, progress);
  }

  private static RewindRefusedException noShard(String what, String topic) {
    return new RewindRefusedException(what + " refused: topic '" + topic + "' has no shard: no relay_lease row"
        + " and no stream in Redis under this key prefix", RewindRefusedException.Reason.NO_SHARD, -1, null, null);
  }

  /** Closes this admin's connections. */
  @Override
  public void close() {
    redis.close();
  }

  /** Builds a {@link StreamAdmin}. Not thread-safe. */
  public static final class Builder {

    private final RedisConnectionSpec spec;
    private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
    private DataSource dataSource;
    private String schema = SchemaNames.DEFAULT_SCHEMA;
    private int countLimit = DEFAULT_COUNT_LIMIT;

    private Builder(RedisConnectionSpec spec) {
      this.spec = spec;
    }

    /** The prefix of the topic's Redis keys. Defaults to {@code handoff}. */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = StreamFormat.requireValidKeyPrefix(keyPrefix);
      return this;
    }

    /** The database whose {@code relay_lease} rows list a topic's shards. Optional: without it, Redis is scanned. */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      return this;
    }

    /** The schema holding {@code relay_lease}. Defaults to {@code handoff}. */
    public Builder schema(String schema) {
      this.schema = SchemaNames.requireValid(schema);
      return this;
    }

    /**
     * The most entries one count looks at (entries that come again, a group's backlog, a dry run's removable
     * entries); past it a count says "at least". Defaults to {@value #DEFAULT_COUNT_LIMIT}. A rewind counts inside
     * its atomic script, so this also bounds how long it holds Redis.
     */
    public Builder countLimit(int entries) {
      if (entries < 1) {
        throw new IllegalArgumentException("countLimit must be at least 1, was " + entries);
      }
      this.countLimit = entries;
      return this;
    }

    public StreamAdmin build() {
      return new StreamAdmin(this);
    }
  }
}
