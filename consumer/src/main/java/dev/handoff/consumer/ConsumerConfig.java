package dev.handoff.consumer;

import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.SchemaNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The settings of a {@link StreamConsumer} or a {@link ListConsumer}, validated, in small groups of what is tuned
 * together: {@link Reading}, {@link Retries}, {@link Upkeep}, and the transport's own ({@link StreamSettings} or
 * {@link ListSettings}). Built by {@link StreamConsumerBuilder} and {@link ListConsumerBuilder}, whose setters have
 * the names of the components and document their defaults; the defaults named here are those.
 *
 * <p>The handler, the listener, the clock and the fault hooks are not settings: the builder hands them to the
 * consumer beside this record, so that a consumer's settings can be read, compared and logged without them.
 *
 * <p>Immutable, and so thread-safe; every group validates its own components when it is made, and this record what
 * relates them (a {@code maxBackoff} within the transport's presumed-dead time).
 *
 * @param schema the schema holding handoff's {@code inbox} and {@code dead_letter} tables; default {@code handoff}
 * @param keyPrefix the prefix of the Redis keys (must match the relay's); default {@code handoff}
 * @param topic the topic and its shard count (must match the producers' and the relay's); required
 * @param group the consumer group; also the first column of the inbox marker; required
 * @param consumerName the base of the consumer names; worker {@code i} reads as {@code <consumerName>-<i>}; default
 *     {@code <host>-<pid>-<random>}, unique per process
 * @param reading how many workers read, how much each holds and how long each waits
 * @param retries what becomes of a message whose handler fails
 * @param upkeep what a started consumer does for its group beside its workers
 * @param transport the settings only one transport has: {@link StreamSettings} for a stream consumer,
 *     {@link ListSettings} for a list consumer
 */
public record ConsumerConfig(
    String schema,
    String keyPrefix,
    TopicConfig topic,
    String group,
    String consumerName,
    Reading reading,
    Retries retries,
    Upkeep upkeep,
    TransportSettings transport) {

  /** The pattern group and consumer names match: they end up in Redis commands and the inbox table. */
  public static final Pattern NAME_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@-]{0,149}");

  public ConsumerConfig {
    SchemaNames.requireValid(schema);
    StreamFormat.requireValidKeyPrefix(keyPrefix);
    Objects.requireNonNull(topic, "topic must be set");
    requireName("group", group);
    requireName("consumerName", consumerName);
    Objects.requireNonNull(reading, "reading");
    Objects.requireNonNull(retries, "retries");
    Objects.requireNonNull(upkeep, "upkeep");
    Objects.requireNonNull(transport, "transport");
    Duration maxBackoff = retries.maxBackoff();
    if (transport instanceof StreamSettings s && maxBackoff.compareTo(s.minIdle()) > 0) {
      // The backoff is an idle-time reset; Redis 7.0 cannot hold an entry back for longer than minIdle.
      throw new IllegalArgumentException(
          "maxBackoff must not exceed minIdle (" + s.minIdle() + "), was " + maxBackoff);
    }
    if (transport instanceof ListSettings l && maxBackoff.compareTo(l.heartbeatTtl()) > 0) {
      // The streams' rule, kept so that one set of backoffs suits both transports: no retry waits longer than a
      // silent holder takes to be presumed dead.
      throw new IllegalArgumentException(
          "maxBackoff must not exceed heartbeatTtl (" + l.heartbeatTtl() + "), was " + maxBackoff);
    }
  }

  /**
   * How a consumer reads: its worker threads, the batch each takes, and how long its reads and Redis commands wait.
   * The four size the consumer's Redis connections: a blocking one per worker (whose socket timeout follows
   * {@code block}) and a pool for the other commands, which waits at most {@code redisPoolWait}. Immutable.
   *
   * @param workers worker threads; each reads and handles one batch at a time; default 1, between 1 and 256
   * @param batchSize the most entries one worker reads (and holds) at a time, handled in one transaction; default
   *     100, between 1 and 10,000
   * @param block how long a read waits for new entries; also bounds how long {@code close} waits for a read;
   *     default 1 s, between 1 ms and 60 s
   * @param redisPoolWait the longest a command waits for a pooled Redis connection before failing; default 2 s
   */
  public record Reading(int workers, int batchSize, Duration block, Duration redisPoolWait) {

    public Reading {
      requireBetween("workers", workers, 1, 256);
      requireBetween("batchSize", batchSize, 1, 10_000);
      requirePositive("block", block);
      if (block.toMillis() < 1 || block.toMillis() > 60_000) {
        throw new IllegalArgumentException("block must be between 1 ms and 60 s, was " + block);
      }
      requirePositive("redisPoolWait", redisPoolWait);
    }
  }

  /**
   * What becomes of a message whose handler fails: how its failure is kept from its batch, how long it waits before
   * each retry, and after how many deliveries it is dead-lettered. Immutable.
   *
   * @param maxDeliveries deliveries after which a failing message is dead-lettered (on a list, returns by the reaper
   *     count too); default 10, between 1 and 1,000,000
   * @param initialBackoff the backoff after a first failure; it doubles per delivery, with jitter; default 1 s (or
   *     {@code maxBackoff}'s default, if that is shorter)
   * @param maxBackoff the longest backoff, at least {@code initialBackoff}; default, and at most, a stream's
   *     {@code minIdle} or a list's {@code heartbeatTtl}
   * @param failureIsolation how a failing handler is kept from undoing its batch; default
   *     {@link FailureIsolation#OPTIMISTIC_BATCH}, the only one a batch handler or application-run transactions allow
   */
  public record Retries(int maxDeliveries, Duration initialBackoff, Duration maxBackoff,
      FailureIsolation failureIsolation) {

    public Retries {
      requireBetween("maxDeliveries", maxDeliveries, 1, 1_000_000);
      requirePositive("initialBackoff", initialBackoff);
      requirePositive("maxBackoff", maxBackoff);
      if (initialBackoff.compareTo(maxBackoff) > 0) {
        throw new IllegalArgumentException(
            "initialBackoff must not exceed maxBackoff (" + maxBackoff + "), was " + initialBackoff);
      }
      Objects.requireNonNull(failureIsolation, "failureIsolation");
    }
  }

  /**
   * What a started consumer does for its group beside its workers, each on a schedule of its own: purging old
   * inbox markers, and running the dead-letter retries an operator requested. A consumer that is only polled does
   * neither. Immutable.
   *
   * @param inboxRetention how long markers are kept and whether they are purged automatically; default
   *     {@link InboxRetention#defaults()} (outbox retention 7 days, dedup window 8 days, a purge every 10 minutes)
   * @param retryRequestInterval how often a started consumer runs the dead-letter retries an operator requested
   *     ({@link dev.handoff.consumer.admin.DeadLetterAdmin#requestRetry}); default 5 s
   */
  public record Upkeep(InboxRetention inboxRetention, Duration retryRequestInterval) {

    public Upkeep {
      Objects.requireNonNull(inboxRetention, "inboxRetention");
      requirePositive("retryRequestInterval", retryRequestInterval);
    }
  }

  /**
   * The settings only one transport has: {@link StreamSettings} or {@link ListSettings}. Each transport finds an
   * abandoned message its own way (a stream entry's idle time, a list consumer's expired heartbeat), so their
   * settings keep their own names. Implementations are immutable.
   */
  public sealed interface TransportSettings permits StreamSettings, ListSettings {}

  /**
   * The settings of the stream transport: when a pending entry counts as abandoned and is claimed, and what only a
   * consumer group has. Immutable.
   *
   * @param minIdle how long a pending entry must sit untouched before another consumer may claim it; entries being
   *     handled have their lease renewed, so this does not bound handler time; default 30 s
   * @param leaseRenewInterval how often in-flight entries have their idle time reset, below {@code minIdle / 2};
   *     also how soon a worker whose thread died gets a new one; default {@code minIdle / 3}
   * @param reclaimInterval how often a full pass over the group's pending entries looks for claimable ones; default
   *     1 s
   * @param startPosition where a newly created group starts; default {@link StartPosition#BEGINNING}
   * @param statusScanLimit how many entries a status call counts per stream before reporting a lower bound; default
   *     10,000, between 1 and 100,000,000
   * @param ordering whether the group applies each shard's messages in order; default {@link Ordering#NONE}. An
   *     ordered group reads through shard leases instead of claiming idle entries, so {@code minIdle},
   *     {@code leaseRenewInterval} and {@code reclaimInterval} do not apply to it
   */
  public record StreamSettings(Duration minIdle, Duration leaseRenewInterval, Duration reclaimInterval,
      StartPosition startPosition, int statusScanLimit, Ordering ordering) implements TransportSettings {

    public StreamSettings {
      requirePositive("minIdle", minIdle);
      requirePositive("leaseRenewInterval", leaseRenewInterval);
      // Two renewals fit in minIdle, so that one that fails or runs late does not let the entry be claimed.
      if (leaseRenewInterval.multipliedBy(2).compareTo(minIdle) >= 0) {
        throw new IllegalArgumentException("leaseRenewInterval must be less than minIdle / 2 (minIdle " + minIdle
            + "), was " + leaseRenewInterval);
      }
      requirePositive("reclaimInterval", reclaimInterval);
      Objects.requireNonNull(startPosition, "startPosition");
      requireBetween("statusScanLimit", statusScanLimit, 1, 100_000_000);
      Objects.requireNonNull(ordering, "ordering");
    }
  }

  /**
   * The settings of the list transport: each consumer keeps heartbeat keys beside its processing lists, and a reaper
   * returns the elements of a consumer whose heartbeat expired. Immutable.
   *
   * @param heartbeatTtl the TTL of the heartbeat keys: a consumer silent for this long is presumed dead and its
   *     elements are returned; default 15 s
   * @param heartbeatInterval how often the heartbeats are renewed, below {@code heartbeatTtl / 2}; also how soon a
   *     worker whose thread died gets a new one; default {@code heartbeatTtl / 3}
   * @param reapInterval how often the consumer's reaper looks for dead consumers; default 1 s
   */
  public record ListSettings(Duration heartbeatTtl, Duration heartbeatInterval, Duration reapInterval)
      implements TransportSettings {

    public ListSettings {
      requirePositive("heartbeatTtl", heartbeatTtl);
      requirePositive("heartbeatInterval", heartbeatInterval);
      // Two heartbeats fit in the TTL, so that one that fails or runs late does not get a live consumer reaped.
      if (heartbeatInterval.multipliedBy(2).compareTo(heartbeatTtl) >= 0) {
        throw new IllegalArgumentException("heartbeatInterval must be less than heartbeatTtl / 2 (heartbeatTtl "
            + heartbeatTtl + "), was " + heartbeatInterval);
      }
      requirePositive("reapInterval", reapInterval);
    }
  }

  /**
   * The stream transport's settings.
   *
   * @throws IllegalStateException if these are a list consumer's settings
   */
  public StreamSettings streamSettings() {
    if (transport instanceof StreamSettings s) {
      return s;
    }
    throw new IllegalStateException("consumer group '" + group + "' has a list consumer's settings, not a stream's");
  }

  /**
   * The list transport's settings.
   *
   * @throws IllegalStateException if these are a stream consumer's settings
   */
  public ListSettings listSettings() {
    if (transport instanceof ListSettings l) {
      return l;
    }
    throw new IllegalStateException("consumer group '" + group + "' has a stream consumer's settings, not a list's");
  }

  /** The streams of the topic, one per shard: {@code <keyPrefix>:{<topic>:<shard>}}. */
  public List<String> streamKeys() {
    List<String> keys = new ArrayList<>(topic.shards());
    for (int shard = 0; shard < topic.shards(); shard++) {
      keys.add(StreamFormat.streamKey(keyPrefix, topic.name(), shard));
    }
    return keys;
  }

  /** The Redis consumer name of worker {@code worker}. */
  public String workerName(int worker) {
    return consumerName + "-" + worker;
  }

  static void requireName(String what, String value) {
    if (value == null || !NAME_PATTERN.matcher(value).matches()) {
      throw new IllegalArgumentException(what + " must match " + NAME_PATTERN.pattern() + ", was "
          + (value == null ? "null" : "'" + value + "'"));
    }
  }

  static void requireBetween(String what, long value, long min, long max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(what + " must be between " + min + " and " + max + ", was " + value);
    }
  }

  static void requirePositive(String what, Duration value) {
    Objects.requireNonNull(value, what);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, was " + value);
    }
  }
}
