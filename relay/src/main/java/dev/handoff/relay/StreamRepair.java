package dev.handoff.relay;

import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.RedisClients;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.relay.internal.StreamRepairs;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * Puts back the entries that some consumer group still needs and that are gone from a topic's streams: deleted with
 * {@code XDEL}, trimmed by hand, or lost in a partial loss that the relay's own loss check does not see. A group
 * still needs its pending entries and every entry after its last-delivered ID.
 *
 * <p>What {@link #repair} does, per shard of the topic (the shards a relay created a {@code relay_lease} row for):
 * <ul>
 *   <li>finds the published outbox rows above the lowest last-delivered ID over the stream's groups (with no group:
 *       above the shard's watermark and the outbox retention cut) whose entry the stream does not hold, and the
 *       groups' pending entries whose body it does not hold;</li>
 *   <li>makes those rows unpublished again, without stream ID, in one transaction (a row whose stream ID changed
 *       meanwhile is not touched), and notifies the relays. The relay owning the shard then publishes them through
 *       its normal fenced path, at the end of the stream with new IDs. This class never writes a stream: one writer
 *       per shard, and Redis refuses an ID below a stream's top;</li>
 *   <li>acknowledges, after that commit, each gone pending entry whose row it reset, in the group that has it
 *       pending, so that consumers do not dead-letter it as lost; the message comes again under its new ID and the
 *       inbox marker makes it harmless to a group that had processed it;</li>
 *   <li>reports a gone pending entry whose outbox row is gone too (purged by the retention) as unrecoverable.</li>
 * </ul>
 *
 * <p>Guarantees and limits: every repaired message is delivered again to every group and handled once per group
 * (the inbox). Per-key order is not kept for repaired messages: they come after their key's later messages. A
 * stream that does not exist is skipped: that is a lost stream, which the relay republishes with the original IDs.
 * The list transport has no such gap (its consumers remove what they finish, and nothing else deletes an element
 * from the middle of a list unseen): a topic relayed to lists is refused with a {@link RepairException}. Costs: the
 * shard's retained published rows are read along the primary key in pages of 1,000 (stream IDs do not rise with
 * outbox ids, so no id bounds the walk), Redis is asked in pages of 1,000.
 *
 * <p>Needs the database grants of the relay role and a Redis user with the relay's commands (the relay's
 * {@link RedisAcl} rule includes {@code XACK} for this). Thread-safe: each call uses its own connection; do not run
 * two repairs of one topic at once (the second may report what the first reset).
 */
public final class StreamRepair {

  private final DataSource dataSource;
  private final RedisConnectionSpec redis;
  private final String schema;
  private final String keyPrefix;
  private final Duration outboxRetention;
  private final Consumer<String> progress;

  private StreamRepair(Builder b) {
    this.dataSource = b.dataSource;
    this.redis = b.redis;
    this.schema = SchemaNames.requireValid(b.schema);
    this.keyPrefix = StreamFormat.requireValidKeyPrefix(b.keyPrefix);
    if (b.outboxRetention.isNegative() || b.outboxRetention.isZero()) {
      throw new IllegalArgumentException("outboxRetention must be positive, got " + b.outboxRetention);
    }
    this.outboxRetention = b.outboxRetention;
    this.progress = b.progress;
  }

  /**
   * A builder over the database holding handoff's tables and the Redis the relays write to; each repair opens a
   * connection of its own there and closes it when done.
   */
  public static Builder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new Builder(dataSource, redis);
  }

  /**
   * Repairs every shard of {@code topic}; with {@code dryRun} changes nothing and reports what it would do.
   *
   * @throws IllegalArgumentException if the topic name is not valid, or no relay ever created a lease for it under
   *     this key prefix
   * @throws RepairException if the database fails, or the topic is relayed to lists
   */
  public RepairReport repair(String topic, boolean dryRun) {
    TopicConfig.requireValidName(topic);
    try (UnifiedJedis client = RedisClients.open(redis, 1, Duration.ofSeconds(5), "handoff-repair")) {
      return StreamRepairs.repair(dataSource, client, schema, keyPrefix, outboxRetention, topic, dryRun, progress);
    } catch (SQLException e) {
      throw new RepairException("repair of topic " + topic + " failed on the database: " + e.getMessage(), e);
    }
  }

  /** The settings of a {@link StreamRepair}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private final RedisConnectionSpec redis;
    private String schema = "handoff";
    private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
    private Duration outboxRetention = RelayBuilder.DEFAULT_OUTBOX_RETENTION;
    private Consumer<String> progress = line -> {};

    private Builder(DataSource dataSource, RedisConnectionSpec redis) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.redis = Objects.requireNonNull(redis, "redis");
    }

    /** The schema holding handoff's tables. Defaults to {@code handoff}. */
    public Builder schema(String schema) {
      this.schema = Objects.requireNonNull(schema, "schema");
      return this;
    }

    /** The prefix of every Redis key, the relays'. Defaults to {@code handoff}. */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
      return this;
    }

    /**
     * The relays' outbox retention (7 days by default, as theirs): a stream without consumer groups is only checked
     * above the retention cut, below which the relay trims it on purpose.
     */
    public Builder outboxRetention(Duration outboxRetention) {
      this.outboxRetention = Objects.requireNonNull(outboxRetention, "outboxRetention");
      return this;
    }

    /** Where progress lines go during a long walk (one per million rows read); none by default. */
    public Builder progress(Consumer<String> progress) {
      this.progress = Objects.requireNonNull(progress, "progress");
      return this;
    }

    public StreamRepair build() {
      return new StreamRepair(this);
    }
  }
}
