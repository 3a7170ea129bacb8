package dev.handoff.consumer;

import dev.handoff.consumer.internal.ConsumerNames;
import dev.handoff.consumer.internal.DefaultListConsumer;
import dev.handoff.consumer.internal.JooqHandlers;
import dev.handoff.consumer.testkit.ConsumerFaults;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.TopicConfig;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/** Builds a {@link ListConsumer}. Not thread-safe; the built consumer is. */
public final class ListConsumerBuilder {

  public static final int DEFAULT_WORKERS = 1;
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final Duration DEFAULT_BLOCK = Duration.ofSeconds(1);
  /** A consumer whose heartbeat is this old is presumed dead and its elements are returned. */
  public static final Duration DEFAULT_HEARTBEAT_TTL = Duration.ofSeconds(15);
  public static final Duration DEFAULT_REAP_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_DELIVERIES = 10;
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
  public static final Duration DEFAULT_REDIS_POOL_WAIT = Duration.ofSeconds(2);

  private final DataSource dataSource;
  private final HostAndPort redis;
  private JedisClientConfig redisConfig = DefaultJedisClientConfig.builder().build();
  private String schema = HandoffMigrations.DEFAULT_SCHEMA;
  private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
  private TopicConfig topic;
  private String group;
  private String consumerName;
  private MessageHandler handler;
  private BatchMessageHandler batchHandler;
  private int workers = DEFAULT_WORKERS;
  private int batchSize = DEFAULT_BATCH_SIZE;
  private Duration block = DEFAULT_BLOCK;
  private Duration heartbeatTtl = DEFAULT_HEARTBEAT_TTL;
  private Duration heartbeatInterval;
  private Duration reapInterval = DEFAULT_REAP_INTERVAL;
  private int maxDeliveries = DEFAULT_MAX_DELIVERIES;
  private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
  private Duration maxBackoff;
  private FailureIsolation failureIsolation = FailureIsolation.OPTIMISTIC_BATCH;
  private Duration redisPoolWait = DEFAULT_REDIS_POOL_WAIT;
  private ConsumerListener listener = ConsumerListener.NOOP;
  private InboxRetention inboxRetention = InboxRetention.defaults();
  private ConsumerFaults faults = ConsumerFaults.NONE;
  private Clock clock = Clock.systemUTC();

  ListConsumerBuilder(DataSource dataSource, HostAndPort redis) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.redis = Objects.requireNonNull(redis, "redis");
  }

  /**
   * Credentials, TLS, database and timeouts for the Redis connections. handoff always speaks RESP2 and sets the
   * blocking socket timeout itself ({@code block} + margin). Defaults to Jedis's defaults.
   */
  public ListConsumerBuilder redisConfig(JedisClientConfig config) {
    this.redisConfig = Objects.requireNonNull(config, "redisConfig");
    return this;
  }

  /** The schema holding handoff's tables. Defaults to {@code handoff}. */
  public ListConsumerBuilder schema(String schema) {
    this.schema = schema;
    return this;
  }

  /** The prefix of handoff's Redis keys; must be the relay's. Defaults to {@code handoff}. */
  public ListConsumerBuilder keyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
    return this;
  }

  /** The topic, with its shard count (all shards are consumed). Required. */
  public ListConsumerBuilder topic(TopicConfig topic) {
    this.topic = Objects.requireNonNull(topic, "topic");
    return this;
  }

  /** The topic, with one shard. */
  public ListConsumerBuilder topic(String topic) {
    return topic(TopicConfig.of(topic));
  }

  /**
   * The scope of idempotency (the inbox marker is {@code (group, message ID)}) and of dead letters. All consumers
   * of a topic's lists must use the same group: a list element goes to one of them. Required.
   */
  public ListConsumerBuilder group(String group) {
    this.group = group;
    return this;
  }

  /**
   * The base of this instance's consumer names (worker {@code i} is {@code <name>-<i>}, with a processing list per
   * shard). Never shared by two live processes. A stable name lets a restarted process handle what its processing
   * lists hold at once instead of waiting for the reaper. Defaults to {@code <host>-<pid>-<random>}.
   */
  public ListConsumerBuilder consumerName(String consumerName) {
    this.consumerName = consumerName;
    return this;
  }

  /** The application's work per message, on the transaction that holds the inbox marker. Required (or a batch one). */
  public ListConsumerBuilder handler(MessageHandler handler) {
    this.handler = Objects.requireNonNull(handler, "handler");
    this.batchHandler = null;
    return this;
  }

  /** The application's work for all new messages of a batch at once; replaces {@link #handler}. */
  public ListConsumerBuilder batchHandler(BatchMessageHandler handler) {
    this.batchHandler = Objects.requireNonNull(handler, "batchHandler");
    this.handler = null;
    return this;
  }

  /** The application's work per message, as jOOQ on the transaction that holds the inbox marker. */
  public ListConsumerBuilder jooqHandler(JooqMessageHandler handler) {
    this.handler = JooqHandlers.adapt(Objects.requireNonNull(handler, "handler"));
    this.batchHandler = null;
    return this;
  }

  /** Worker threads, each with its own blocking connection and processing lists. Defaults to 1. */
  public ListConsumerBuilder workers(int workers) {
    this.workers = workers;
    return this;
  }

  /**
   * The most elements one worker holds (in its processing lists, retries included) and settles in one transaction.
   * Defaults to 100.
   */
  public ListConsumerBuilder batchSize(int batchSize) {
    this.batchSize = batchSize;
    return this;
  }

  /** How long a {@code BLMOVE} waits for an element; also bounds how long {@code close} waits. Defaults to 1 s. */
  public ListConsumerBuilder block(Duration block) {
    this.block = block;
    return this;
  }

  /**
   * The TTL of the heartbeat keys: a consumer silent for this long is presumed dead and the reaper returns its
   * elements. Heartbeats come from a thread of their own, so a long handler does not make its consumer look dead.
   * Defaults to 15 s.
   */
  public ListConsumerBuilder heartbeatTtl(Duration ttl) {
    this.heartbeatTtl = ttl;
    return this;
  }

  /** How often the heartbeats are renewed; below {@code heartbeatTtl / 2}. Defaults to {@code heartbeatTtl / 3}. */
  public ListConsumerBuilder heartbeatInterval(Duration interval) {
    this.heartbeatInterval = interval;
    return this;
  }

  /** How often this consumer's reaper looks for dead consumers. Defaults to 1 s. */
  public ListConsumerBuilder reapInterval(Duration interval) {
    this.reapInterval = interval;
    return this;
  }

  /** Deliveries (failures and returns by the reaper) after which a message is dead-lettered. Defaults to 10. */
  public ListConsumerBuilder maxDeliveries(int maxDeliveries) {
    this.maxDeliveries = maxDeliveries;
    return this;
  }

  /**
   * The backoff before a failed element is retried: {@code initial x 2^(deliveries-1)}, jittered, capped by
   * {@code max} (at most {@code heartbeatTtl}). Defaults to 1 s and {@code heartbeatTtl}.
   */
  public ListConsumerBuilder backoff(Duration initial, Duration max) {
    this.initialBackoff = initial;
    this.maxBackoff = max;
    return this;
  }

  /** How a failing handler is isolated from its batch. Defaults to {@link FailureIsolation#OPTIMISTIC_BATCH}. */
  public ListConsumerBuilder failureIsolation(FailureIsolation isolation) {
    this.failureIsolation = isolation;
    return this;
  }

  /** The longest a Redis command waits for a pooled connection. Defaults to 2 s. */
  public ListConsumerBuilder redisPoolWait(Duration wait) {
    this.redisPoolWait = wait;
    return this;
  }

  /**
   * How long the group keeps its inbox markers and whether a started consumer purges older ones by itself; see
   * {@link InboxRetention}. Set its outbox retention to the relays'. Defaults to {@link InboxRetention#defaults()}:
   * outbox retention 7 days, dedup window 8 days, automatic purge every 10 minutes.
   */
  public ListConsumerBuilder inboxRetention(InboxRetention retention) {
    this.inboxRetention = java.util.Objects.requireNonNull(retention, "inboxRetention");
    return this;
  }

  /**
   * Test seam: a hook called where a crash matters (inside the batch transaction, and after its commit before the
   * acknowledgement), so that a test or a demo can kill a worker there with a
   * {@link dev.handoff.outbox.testkit.SimulatedCrash}; see {@link ConsumerFaults}. Not for production use.
   * Defaults to {@link ConsumerFaults#NONE}.
   */
  public ListConsumerBuilder faults(ConsumerFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
    return this;
  }

  /** Metrics callbacks. Defaults to {@link ConsumerListener#NOOP}. */
  public ListConsumerBuilder listener(ConsumerListener listener) {
    this.listener = listener;
    return this;
  }

  /** The clock for backoffs and ages. Defaults to the system UTC clock. */
  public ListConsumerBuilder clock(Clock clock) {
    this.clock = clock;
    return this;
  }

  /** The validated settings, in the shared record (see {@link ListConsumer} for the mapping of names). */
  public ConsumerConfig config() {
    Duration interval = heartbeatInterval != null ? heartbeatInterval
        : heartbeatTtl == null ? null : heartbeatTtl.dividedBy(3);
    Duration max = maxBackoff != null ? maxBackoff : heartbeatTtl;
    Duration initial = initialBackoff;
    if (maxBackoff == null && initial != null && max != null && initial.compareTo(max) > 0) {
      initial = max;
    }
    requireValidListSettings(interval, initial, max);
    return new ConsumerConfig(schema, keyPrefix, topic, group,
        consumerName != null ? consumerName : ConsumerNames.generate(), handler, batchHandler, workers, batchSize,
        block, heartbeatTtl, interval, reapInterval, maxDeliveries, initial, max, StartPosition.BEGINNING,
        failureIsolation, redisPoolWait, StreamConsumerBuilder.DEFAULT_STATUS_SCAN_LIMIT, inboxRetention, listener,
        clock);
  }

  /**
   * Checks the settings the shared config knows by stream names (minIdle, leaseRenewInterval, reclaimInterval), so
   * that an error names the setting of this builder the user actually set. The rules are the config's own.
   */
  private void requireValidListSettings(Duration interval, Duration initial, Duration max) {
    ConsumerConfig.requirePositive("heartbeatTtl", heartbeatTtl);
    ConsumerConfig.requirePositive("heartbeatInterval", interval);
    if (interval.multipliedBy(2).compareTo(heartbeatTtl) >= 0) {
      throw new IllegalArgumentException("heartbeatInterval must be less than heartbeatTtl / 2 (heartbeatTtl "
          + heartbeatTtl + "), was " + interval);
    }
    ConsumerConfig.requirePositive("reapInterval", reapInterval);
    ConsumerConfig.requirePositive("initialBackoff", initial);
    ConsumerConfig.requirePositive("maxBackoff", max);
    if (max.compareTo(heartbeatTtl) > 0) {
      throw new IllegalArgumentException("maxBackoff must not exceed heartbeatTtl (" + heartbeatTtl + "), was " + max);
    }
  }

  /**
   * Validates the settings and builds the consumer; nothing runs until {@link ListConsumer#start()} or
   * {@link ListConsumer#pollOnce()}.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   */
  public ListConsumer build() {
    return new DefaultListConsumer(config(), dataSource, redis, redisConfig, faults);
  }
}
