package dev.handoff.consumer;

import dev.handoff.consumer.internal.ConsumerNames;
import dev.handoff.consumer.internal.DefaultStreamConsumer;
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

/** Builds a {@link StreamConsumer}. Not thread-safe; the built consumer is. */
public final class StreamConsumerBuilder {

  public static final int DEFAULT_WORKERS = 1;
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final Duration DEFAULT_BLOCK = Duration.ofSeconds(1);
  public static final Duration DEFAULT_MIN_IDLE = Duration.ofSeconds(30);
  public static final Duration DEFAULT_RECLAIM_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_DELIVERIES = 10;
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
  public static final Duration DEFAULT_REDIS_POOL_WAIT = Duration.ofSeconds(2);
  public static final int DEFAULT_STATUS_SCAN_LIMIT = 10_000;

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
  private Duration minIdle = DEFAULT_MIN_IDLE;
  private Duration leaseRenewInterval;
  private Duration reclaimInterval = DEFAULT_RECLAIM_INTERVAL;
  private int maxDeliveries = DEFAULT_MAX_DELIVERIES;
  private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
  private Duration maxBackoff;
  private StartPosition startPosition = StartPosition.BEGINNING;
  private FailureIsolation failureIsolation = FailureIsolation.OPTIMISTIC_BATCH;
  private Duration redisPoolWait = DEFAULT_REDIS_POOL_WAIT;
  private int statusScanLimit = DEFAULT_STATUS_SCAN_LIMIT;
  private ConsumerListener listener = ConsumerListener.NOOP;
  private InboxRetention inboxRetention = InboxRetention.defaults();
  private ConsumerFaults faults = ConsumerFaults.NONE;
  private Clock clock = Clock.systemUTC();

  StreamConsumerBuilder(DataSource dataSource, HostAndPort redis) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.redis = Objects.requireNonNull(redis, "redis");
  }

  /**
   * Credentials, TLS, database and timeouts for the Redis connections handoff opens. handoff always speaks RESP2
   * and sets the blocking-read socket timeout itself ({@code block} + margin), whatever this says. Defaults to
   * Jedis's defaults (no auth, 2 s timeouts).
   */
  public StreamConsumerBuilder redisConfig(JedisClientConfig config) {
    this.redisConfig = Objects.requireNonNull(config, "redisConfig");
    return this;
  }

  /** The schema holding handoff's tables. Defaults to {@code handoff}. */
  public StreamConsumerBuilder schema(String schema) {
    this.schema = schema;
    return this;
  }

  /** The prefix of handoff's Redis keys; must be the relay's. Defaults to {@code handoff}. */
  public StreamConsumerBuilder keyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
    return this;
  }

  /** The topic to consume, with its shard count (all shards are consumed). Required. */
  public StreamConsumerBuilder topic(TopicConfig topic) {
    this.topic = Objects.requireNonNull(topic, "topic");
    return this;
  }

  /** The topic to consume, with one shard. */
  public StreamConsumerBuilder topic(String topic) {
    return topic(TopicConfig.of(topic));
  }

  /**
   * The consumer group. Every group sees every message once; consumers in one group share the work. The group is
   * also the scope of idempotency: the inbox marker is {@code (group, message ID)}. Required.
   */
  public StreamConsumerBuilder group(String group) {
    this.group = group;
    return this;
  }

  /**
   * The base of this instance's Redis consumer names (worker {@code i} is {@code <name>-<i>}). Two live processes
   * must never share a name: they would share one pending list and replay each other's work in flight. A stable
   * name (a StatefulSet ordinal, say) lets a restarted process replay its own pending entries at once instead of
   * waiting {@code minIdle} for another consumer to claim them. Defaults to {@code <host>-<pid>-<random>}, unique
   * per process.
   */
  public StreamConsumerBuilder consumerName(String consumerName) {
    this.consumerName = consumerName;
    return this;
  }

  /** The application's work per message, on the JDBC transaction that holds the inbox marker. Required. */
  public StreamConsumerBuilder handler(MessageHandler handler) {
    this.handler = Objects.requireNonNull(handler, "handler");
    this.batchHandler = null;
    return this;
  }

  /**
   * The application's work for all new messages of a batch at once (see {@link BatchMessageHandler}); replaces
   * {@link #handler(MessageHandler)}. The fastest option: effects can be written in one round trip.
   */
  public StreamConsumerBuilder batchHandler(BatchMessageHandler handler) {
    this.batchHandler = Objects.requireNonNull(handler, "batchHandler");
    this.handler = null;
    return this;
  }

  /** The application's work per message, as jOOQ on the transaction that holds the inbox marker. */
  public StreamConsumerBuilder jooqHandler(JooqMessageHandler handler) {
    this.handler = JooqHandlers.adapt(Objects.requireNonNull(handler, "handler"));
    this.batchHandler = null;
    return this;
  }

  /** Worker threads, each with its own blocking Redis connection. Defaults to 1. */
  public StreamConsumerBuilder workers(int workers) {
    this.workers = workers;
    return this;
  }

  /**
   * The most entries one worker reads and handles in one transaction; in-flight work is bounded by
   * {@code workers x batchSize}. Defaults to 100.
   */
  public StreamConsumerBuilder batchSize(int batchSize) {
    this.batchSize = batchSize;
    return this;
  }

  /**
   * How long a read waits for new entries ({@code BLOCK}); also bounds how long {@code close} waits for a read.
   * Defaults to 1 s.
   */
  public StreamConsumerBuilder block(Duration block) {
    this.block = block;
    return this;
  }

  /**
   * How long a pending entry must sit untouched before a consumer may claim it (its owner presumed dead). Entries
   * being handled have their lease renewed, so this does not bound handler time. Defaults to 30 s.
   */
  public StreamConsumerBuilder minIdle(Duration minIdle) {
    this.minIdle = minIdle;
    return this;
  }

  /**
   * How often in-flight entries have their lease renewed; must be below {@code minIdle / 2}. Defaults to
   * {@code minIdle / 3}.
   */
  public StreamConsumerBuilder leaseRenewInterval(Duration interval) {
    this.leaseRenewInterval = interval;
    return this;
  }

  /** How often a pass over the group's pending entries claims those idle for {@code minIdle}. Defaults to 1 s. */
  public StreamConsumerBuilder reclaimInterval(Duration interval) {
    this.reclaimInterval = interval;
    return this;
  }

  /** Deliveries after which a failing message goes to the dead-letter table. Defaults to 10. */
  public StreamConsumerBuilder maxDeliveries(int maxDeliveries) {
    this.maxDeliveries = maxDeliveries;
    return this;
  }

  /**
   * The backoff after a failure: {@code initial x 2^(deliveries-1)}, jittered (between half and all of it), capped
   * by {@code max}. Defaults to 1 s and {@code minIdle}; {@code max} may not exceed {@code minIdle} because the
   * backoff works by resetting the entry's idle time, which Redis 7.0 cannot push past {@code minIdle}.
   */
  public StreamConsumerBuilder backoff(Duration initial, Duration max) {
    this.initialBackoff = initial;
    this.maxBackoff = max;
    return this;
  }

  /** Where the group starts if handoff creates it. Defaults to {@link StartPosition#BEGINNING}. */
  public StreamConsumerBuilder startPosition(StartPosition startPosition) {
    this.startPosition = startPosition;
    return this;
  }

  /** How a failing handler is isolated from its batch. Defaults to {@link FailureIsolation#OPTIMISTIC_BATCH}. */
  public StreamConsumerBuilder failureIsolation(FailureIsolation isolation) {
    this.failureIsolation = isolation;
    return this;
  }

  /** The longest a Redis command waits for a pooled connection before failing. Defaults to 2 s. */
  public StreamConsumerBuilder redisPoolWait(Duration wait) {
    this.redisPoolWait = wait;
    return this;
  }

  /**
   * How many entries a status call counts per stream before it reports a lower bound. Defaults to 10,000: counting
   * costs Redis about 2 µs per entry, done in pages of 500 so that no single script holds the server for long.
   */
  public StreamConsumerBuilder statusScanLimit(int limit) {
    this.statusScanLimit = limit;
    return this;
  }

  /**
   * How long the group keeps its inbox markers and whether a started consumer purges older ones by itself; see
   * {@link InboxRetention}. Set its outbox retention to the relays'. Defaults to {@link InboxRetention#defaults()}:
   * outbox retention 7 days, dedup window 8 days, automatic purge every 10 minutes.
   */
  public StreamConsumerBuilder inboxRetention(InboxRetention retention) {
    this.inboxRetention = java.util.Objects.requireNonNull(retention, "inboxRetention");
    return this;
  }

  /**
   * Test seam: a hook called where a crash matters (inside the batch transaction, and after its commit before the
   * acknowledgement), so that a test or a demo can kill a worker there with a
   * {@link dev.handoff.outbox.testkit.SimulatedCrash}; see {@link ConsumerFaults}. Not for production use.
   * Defaults to {@link ConsumerFaults#NONE}.
   */
  public StreamConsumerBuilder faults(ConsumerFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
    return this;
  }

  /** Metrics callbacks. Defaults to {@link ConsumerListener#NOOP}. */
  public StreamConsumerBuilder listener(ConsumerListener listener) {
    this.listener = listener;
    return this;
  }

  /** The clock for backoffs, ages and deadlines. Defaults to the system UTC clock. */
  public StreamConsumerBuilder clock(Clock clock) {
    this.clock = clock;
    return this;
  }

  /** The validated settings this builder would build with. */
  public ConsumerConfig config() {
    Duration renew = leaseRenewInterval != null ? leaseRenewInterval : minIdle == null ? null : minIdle.dividedBy(3);
    Duration max = maxBackoff != null ? maxBackoff : minIdle;
    Duration initial = initialBackoff;
    if (maxBackoff == null && initial != null && max != null && initial.compareTo(max) > 0) {
      initial = max; // only the defaults conflict here (minIdle below 1 s): follow minIdle
    }
    return new ConsumerConfig(schema, keyPrefix, topic, group,
        consumerName != null ? consumerName : ConsumerNames.generate(), handler, batchHandler, workers, batchSize,
        block, minIdle, renew, reclaimInterval, maxDeliveries, initial, max, startPosition, failureIsolation,
        redisPoolWait, statusScanLimit, inboxRetention, listener, clock);
  }

  /**
   * Validates the settings and builds the consumer. Nothing runs until {@link StreamConsumer#start()} or
   * {@link StreamConsumer#pollOnce()}.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   * @throws NullPointerException naming a required setting that is missing
   */
  public StreamConsumer build() {
    return new DefaultStreamConsumer(config(), dataSource, redis, redisConfig, faults);
  }
}
