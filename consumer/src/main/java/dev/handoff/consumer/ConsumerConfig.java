package dev.handoff.consumer;

import dev.handoff.migrations.SchemaNames;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.TopicConfig;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The settings of a {@link StreamConsumer}, validated and immutable. Built by {@link StreamConsumerBuilder}, where
 * each setting's default is documented.
 *
 * @param schema the schema holding handoff's {@code inbox} and {@code dead_letter} tables
 * @param keyPrefix the prefix of the Redis keys (must match the relay's)
 * @param topic the topic and its shard count (must match the producers' and the relay's)
 * @param group the consumer group; also the first column of the inbox marker
 * @param consumerName the base of the consumer names; worker {@code i} reads as {@code <consumerName>-<i>}
 * @param handler the application's work per message, or {@code null} when {@code batchHandler} is set
 * @param batchHandler the application's work per batch, or {@code null} when {@code handler} is set
 * @param workers worker threads; each reads and handles one batch at a time
 * @param batchSize the most entries one worker reads (and holds) at a time
 * @param block how long a read waits for new entries
 * @param minIdle how long a pending entry must sit untouched before another consumer may claim it
 * @param leaseRenewInterval how often in-flight entries have their idle time reset (below {@code minIdle / 2})
 * @param reclaimInterval how often a full pass over the group's pending entries looks for claimable ones
 * @param maxDeliveries deliveries after which a failing message is dead-lettered
 * @param initialBackoff the backoff after a first failure; it doubles per delivery, with jitter
 * @param maxBackoff the longest backoff (at most {@code minIdle})
 * @param startPosition where a newly created group starts
 * @param failureIsolation how a failing handler is kept from undoing its batch
 * @param redisPoolWait the longest a command waits for a pooled Redis connection
 * @param statusScanLimit how many entries a status call counts per stream before reporting a lower bound
 * @param inboxRetention how long markers are kept and whether they are purged automatically
 * @param retryRequestInterval how often a started consumer runs the dead-letter retries an operator requested
 *     ({@link DeadLetterAdmin#requestRetry})
 * @param listener metrics callbacks
 * @param clock the source of time
 */
public record ConsumerConfig(
    String schema,
    String keyPrefix,
    TopicConfig topic,
    String group,
    String consumerName,
    MessageHandler handler,
    BatchMessageHandler batchHandler,
    int workers,
    int batchSize,
    Duration block,
    Duration minIdle,
    Duration leaseRenewInterval,
    Duration reclaimInterval,
    int maxDeliveries,
    Duration initialBackoff,
    Duration maxBackoff,
    StartPosition startPosition,
    FailureIsolation failureIsolation,
    Duration redisPoolWait,
    int statusScanLimit,
    InboxRetention inboxRetention,
    Duration retryRequestInterval,
    ConsumerListener listener,
    Clock clock) {

  /** The pattern group and consumer names match: they end up in Redis commands and the inbox table. */
  public static final Pattern NAME_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@-]{0,149}");

  public ConsumerConfig {
    SchemaNames.requireValid(schema);
    StreamFormat.requireValidKeyPrefix(keyPrefix);
    Objects.requireNonNull(topic, "topic must be set");
    requireName("group", group);
    requireName("consumerName", consumerName);
    if ((handler == null) == (batchHandler == null)) {
      throw new IllegalArgumentException("exactly one of handler and batchHandler must be set");
    }
    requireBetween("workers", workers, 1, 256);
    requireBetween("batchSize", batchSize, 1, 10_000);
    requirePositive("block", block);
    if (block.toMillis() < 1 || block.toMillis() > 60_000) {
      throw new IllegalArgumentException("block must be between 1 ms and 60 s, was " + block);
    }
    requirePositive("minIdle", minIdle);
    requirePositive("leaseRenewInterval", leaseRenewInterval);
    if (leaseRenewInterval.multipliedBy(2).compareTo(minIdle) >= 0) {
      throw new IllegalArgumentException("leaseRenewInterval must be less than minIdle / 2 (minIdle " + minIdle
          + "), was " + leaseRenewInterval);
    }
    requirePositive("reclaimInterval", reclaimInterval);
    requireBetween("maxDeliveries", maxDeliveries, 1, 1_000_000);
    requirePositive("initialBackoff", initialBackoff);
    requirePositive("maxBackoff", maxBackoff);
    if (maxBackoff.compareTo(minIdle) > 0) {
      // The backoff is an idle-time reset; Redis 7.0 cannot hold an entry back for longer than minIdle.
      throw new IllegalArgumentException(
          "maxBackoff must not exceed minIdle (" + minIdle + "), was " + maxBackoff);
    }
    if (initialBackoff.compareTo(maxBackoff) > 0) {
      throw new IllegalArgumentException(
          "initialBackoff must not exceed maxBackoff (" + maxBackoff + "), was " + initialBackoff);
    }
    Objects.requireNonNull(startPosition, "startPosition");
    Objects.requireNonNull(failureIsolation, "failureIsolation");
    if (batchHandler != null && failureIsolation != FailureIsolation.OPTIMISTIC_BATCH) {
      throw new IllegalArgumentException("a batchHandler needs failureIsolation OPTIMISTIC_BATCH, was "
          + failureIsolation);
    }
    requirePositive("redisPoolWait", redisPoolWait);
    requireBetween("statusScanLimit", statusScanLimit, 1, 100_000_000);
    Objects.requireNonNull(inboxRetention, "inboxRetention");
    requirePositive("retryRequestInterval", retryRequestInterval);
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(clock, "clock");
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
