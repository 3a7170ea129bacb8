package dev.handoff.consumer;

import dev.handoff.consumer.internal.Collaborators;
import dev.handoff.consumer.internal.ConsumerNames;
import dev.handoff.consumer.internal.JooqHandlers;
import dev.handoff.consumer.internal.RecordedShards;
import dev.handoff.consumer.internal.SettleOptions;
import dev.handoff.consumer.internal.micrometer.ConsumerMetrics;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.MetricsRefresher;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.Statements;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * The settings both consumers take, with the same names and meanings: {@link StreamConsumerBuilder} and
 * {@link ListConsumerBuilder} add their transport's own (a stream's {@code minIdle} and reclaim pass, a list's
 * heartbeat and reaper). Not thread-safe; the built consumer is.
 *
 * @param <B> the builder itself, so that the shared settings chain with the transport's own
 */
public abstract class ConsumerBuilder<B extends ConsumerBuilder<B>> {

  public static final int DEFAULT_WORKERS = 1;
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final Duration DEFAULT_BLOCK = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_DELIVERIES = 10;
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
  public static final Duration DEFAULT_REDIS_POOL_WAIT = Duration.ofSeconds(2);
  /** How often the gauges read from {@code status()} (backlog, pending, oldest pending age, dead letters) refresh. */
  public static final Duration DEFAULT_METRICS_REFRESH_INTERVAL = Duration.ofSeconds(10);
  /** How often a started consumer runs the dead-letter retries an operator requested. */
  public static final Duration DEFAULT_RETRY_REQUEST_INTERVAL = Duration.ofSeconds(5);

  final DataSource dataSource;
  final HostAndPort redis;
  final Set<HostAndPort> redisCluster;
  final JedisClientConfig redisConfig;
  String schema = SchemaNames.DEFAULT_SCHEMA;
  String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
  TopicConfig topic;
  String group;
  String consumerName;
  MessageHandler handler;
  BatchMessageHandler batchHandler;
  /** Which setter gave the handler: a second kind is refused, since a consumer has one handler. */
  private String handlerSetter;
  int workers = DEFAULT_WORKERS;
  int batchSize = DEFAULT_BATCH_SIZE;
  Duration block = DEFAULT_BLOCK;
  int maxDeliveries = DEFAULT_MAX_DELIVERIES;
  Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
  Duration maxBackoff;
  FailureIsolation failureIsolation = FailureIsolation.OPTIMISTIC_BATCH;
  Duration redisPoolWait = DEFAULT_REDIS_POOL_WAIT;
  ConsumerListener listener = ConsumerListener.NOOP;
  InboxRetention inboxRetention = InboxRetention.defaults();
  Duration retryRequestInterval = DEFAULT_RETRY_REQUEST_INTERVAL;
  ConsumerFaults faults = ConsumerFaults.NONE;
  ConsumerTransactions transactions;
  boolean refuseGhosts;
  boolean topicCountFromDatabase;
  Clock clock = Clock.systemUTC();
  MeterRegistry meterRegistry;
  Duration metricsRefreshInterval = DEFAULT_METRICS_REFRESH_INTERVAL;

  ConsumerBuilder(DataSource dataSource, RedisConnectionSpec redis) {
    // Behind a pooler in transaction mode nothing of handoff's may outlive a transaction (see Statements).
    this.dataSource = Statements.sessionFree(Objects.requireNonNull(dataSource, "dataSource"));
    Objects.requireNonNull(redis, "redis");
    this.redis = redis.hostAndPort();
    this.redisCluster = redis.clusterNodes();
    this.redisConfig = redis.clientConfig();
  }

  abstract B self();

  /** The schema holding handoff's tables. Defaults to {@code handoff}. */
  public B schema(String schema) {
    this.schema = schema;
    return self();
  }

  /** The prefix of handoff's Redis keys; must be the relay's. Defaults to {@code handoff}. */
  public B keyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
    return self();
  }

  /**
   * The topic to consume, stating its shard count (all shards are consumed). The count must be the one declared for
   * the topic in the database, if one is: {@code start()} and {@code pollOnce()} fail otherwise, with a
   * {@link dev.handoff.core.TopicMismatchException} naming both counts. Required, in this form or by name.
   */
  public B topic(TopicConfig topic) {
    this.topic = Objects.requireNonNull(topic, "topic");
    this.topicCountFromDatabase = false;
    return self();
  }

  /**
   * The topic to consume, with the shard count on record for it in the database (recorded by the relay or consumer
   * that stated one first), read by {@link #build()}: build the consumer once the topic's relay has started. With no
   * count on record yet, it takes one shard and says so in a WARN line; if a relay then records another count,
   * {@code start()} refuses it with a {@link dev.handoff.core.TopicMismatchException}. Stating the count with
   * {@link #topic(TopicConfig)} avoids the question.
   */
  public B topic(String topic) {
    this.topic = TopicConfig.of(topic);
    this.topicCountFromDatabase = true;
    return self();
  }

  /**
   * The consumer group: the scope of idempotency, since the inbox marker is {@code (group, message ID)}. On
   * streams every group sees every message once and consumers in one group share the work; on lists a message goes
   * to one consumer, so all consumers of a topic's lists share one group. Required.
   */
  public B group(String group) {
    this.group = group;
    return self();
  }

  /**
   * The application's work per message, on the JDBC transaction that holds the inbox marker. A consumer has one
   * handler: this, {@link #batchHandler} or {@link #jooqHandler}, required.
   *
   * @throws IllegalStateException if the other kind of handler was set
   */
  public B handler(MessageHandler handler) {
    oneHandler("handler");
    this.handler = Objects.requireNonNull(handler, "handler");
    return self();
  }

  /**
   * The application's work for all new messages of a batch at once (see {@link BatchMessageHandler}), instead of
   * {@link #handler(MessageHandler)}. The fastest option: effects can be written in one round trip.
   *
   * @throws IllegalStateException if the other kind of handler was set
   */
  public B batchHandler(BatchMessageHandler handler) {
    oneHandler("batchHandler");
    this.batchHandler = Objects.requireNonNull(handler, "batchHandler");
    return self();
  }

  /**
   * The application's work per message, as jOOQ on the transaction that holds the inbox marker, instead of
   * {@link #handler(MessageHandler)}.
   *
   * @throws IllegalStateException if the other kind of handler was set
   */
  public B jooqHandler(JooqMessageHandler handler) {
    oneHandler("jooqHandler");
    this.handler = JooqHandlers.adapt(Objects.requireNonNull(handler, "jooqHandler"));
    return self();
  }

  /** Lets {@code setter} set the handler unless another kind of handler was set (the same kind is replaced). */
  private void oneHandler(String setter) {
    if (handlerSetter != null && !handlerSetter.equals(setter)) {
      throw new IllegalStateException(setter + ": this consumer already has a " + handlerSetter + "; a consumer has"
          + " one handler (handler, batchHandler or jooqHandler)");
    }
    handlerSetter = setter;
  }

  /** Worker threads, each with its own blocking Redis connection. Defaults to 1. */
  public B workers(int workers) {
    this.workers = workers;
    return self();
  }

  /**
   * The most messages one worker takes and handles in one transaction; in-flight work is bounded by
   * {@code workers x batchSize}. Defaults to 100.
   */
  public B batchSize(int batchSize) {
    this.batchSize = batchSize;
    return self();
  }

  /**
   * How long a read waits for new messages ({@code XREADGROUP BLOCK}, {@code BLMOVE} timeout); also bounds how long
   * {@code close} waits for a read. Defaults to 1 s.
   */
  public B block(Duration block) {
    this.block = block;
    return self();
  }

  /** How a failing handler is isolated from its batch. Defaults to {@link FailureIsolation#OPTIMISTIC_BATCH}. */
  public B failureIsolation(FailureIsolation isolation) {
    this.failureIsolation = isolation;
    return self();
  }

  /** The longest a Redis command waits for a pooled connection before failing. Defaults to 2 s. */
  public B redisPoolWait(Duration wait) {
    this.redisPoolWait = wait;
    return self();
  }

  /**
   * How long the group keeps its inbox markers and whether a started consumer purges older ones by itself; see
   * {@link InboxRetention}. Set its outbox retention to the relays'. Defaults to {@link InboxRetention#defaults()}:
   * outbox retention 7 days, dedup window 8 days, automatic purge every 10 minutes.
   */
  public B inboxRetention(InboxRetention retention) {
    this.inboxRetention = Objects.requireNonNull(retention, "inboxRetention");
    return self();
  }

  /**
   * How often a started consumer looks for dead-letter retries an operator requested
   * ({@link dev.handoff.consumer.admin.DeadLetterAdmin#requestRetry}, {@code handoff dlq retry}) and runs them
   * through this consumer's handler, on a thread of its own: each in its own transaction, the inbox marker turning
   * from dead to processed with the handler's effects, and claimed with a row lock so that of several consumers of
   * the group one runs it.
   * One look is one indexed query that finds nothing when no retry is requested. A consumer that is only polled
   * never runs them ({@link HandoffConsumer#maintainOnce()} does). Defaults to 5 s.
   */
  public B retryRequestInterval(Duration interval) {
    this.retryRequestInterval = interval;
    return self();
  }

  /**
   * A hook called where a crash matters (inside the batch transaction, and after its commit before the
   * acknowledgement; a list consumer also before each read, heartbeat renewal, reaper pass, and before close gives
   * back), so that a test or a demo can freeze, fail or end a worker there; see {@link ConsumerFaults}.
   * Defaults to {@link ConsumerFaults#NONE}.
   */
  public B faults(ConsumerFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
    return self();
  }

  /**
   * Lets the application run the consumer's transactions (see {@link ConsumerTransactions}), so that a handler's
   * writes through the application's own data access join the transaction of the inbox marker. Default: none, the
   * consumer runs its transactions itself on the builder's {@code DataSource}, and handlers write through the
   * {@code Connection} they are given. With hosted transactions, failure isolation is always
   * {@link FailureIsolation#OPTIMISTIC_BATCH}; {@link #build()} refuses {@link FailureIsolation#SAVEPOINT_PER_MESSAGE}.
   */
  public B transactions(ConsumerTransactions transactions) {
    this.transactions = Objects.requireNonNull(transactions, "transactions");
    return self();
  }

  /**
   * Whether a message that the consumer's database has no trace of is dead-lettered as a <b>ghost</b> instead of
   * handed to the handler. Only for a consumer that shares the producer's database and schema. After a failover to
   * an asynchronous standby, Redis can hold messages whose transactions the new primary never received; such a
   * message has no outbox row (or a row with its id and another message ID), and no purge of the outbox explains
   * its absence. Applying it would act on a business change that did not happen (a charge for a payment that does
   * not exist). Its dead letter says so; discard it, or retry it if its change did happen.
   *
   * <p>Cost: one read per batch before its transaction, on a connection of its own: a primary key lookup per
   * message, and one index step in the purge log for a message whose row is gone. A consumer whose database never
   * held a row of the topic cannot tell, and pauses with the health reason {@code not-the-producers-database}
   * instead of dead-lettering everything. A retry of a dead letter ({@code dlq retry}) is not checked: the operator
   * decided. Default: false, every message is applied.
   */
  public B refuseGhosts(boolean refuse) {
    this.refuseGhosts = refuse;
    return self();
  }

  /** Metrics callbacks. Defaults to {@link ConsumerListener#NOOP}. */
  public B listener(ConsumerListener listener) {
    this.listener = listener;
    return self();
  }

  /**
   * Publishes the consumer's metrics to {@code registry} (Micrometer, an optional dependency: without this call
   * the consumer needs none of it), tagged {@code topic} and {@code group}: handled, duplicates, failed,
   * dead-lettered, reclaimed, lost, lease losses and pauses (counters), handler time (timer), and gauges of
   * dead letters, paused workers and, per {@code shard}, the never-delivered backlog, pending entries and the oldest
   * pending entry's age. The gauges come from one {@code status()} call every {@link #metricsRefreshInterval}, on a
   * thread of their own, never on a scrape, so they cost what a status call costs (bounded by the status scan
   * limit). docs/operations.md lists every meter. Defaults to no metrics.
   */
  public B meterRegistry(MeterRegistry registry) {
    this.meterRegistry = Objects.requireNonNull(registry, "meterRegistry");
    return self();
  }

  /** How often the gauges read from {@code status()} are refreshed. Defaults to 10 s. */
  public B metricsRefreshInterval(Duration interval) {
    this.metricsRefreshInterval = interval;
    return self();
  }

  /**
   * Builds through {@code create}, instrumented when a meter registry was given. Every setting and collaborator is
   * checked before the database is asked anything.
   */
  final <C extends HandoffConsumer> C buildWith(BiFunction<ConsumerConfig, Collaborators, C> create,
      BiConsumer<C, MetricsRefresher> attachMetrics) {
    ConsumerConfig config = config();
    Collaborators collaborators = new Collaborators(handler, batchHandler, listener, clock, faults);
    FailureIsolation isolation = config.retries().failureIsolation();
    if (batchHandler != null && isolation != FailureIsolation.OPTIMISTIC_BATCH) {
      throw new IllegalArgumentException("a batchHandler needs failureIsolation OPTIMISTIC_BATCH, was " + isolation);
    }
    if (topicCountFromDatabase) {
      topic = topic.withShards(RecordedShards.read(dataSource, schema, topic.name(), group));
      config = config();
    }
    if (transactions != null && isolation == FailureIsolation.SAVEPOINT_PER_MESSAGE) {
      throw new IllegalArgumentException("failureIsolation SAVEPOINT_PER_MESSAGE cannot be used with transactions()"
          + " run by the application: a savepoint rollback does not undo what its framework holds outside the"
          + " database (a JPA persistence context); use OPTIMISTIC_BATCH");
    }
    if (meterRegistry == null) {
      return create.apply(config, collaborators);
    }
    if (metricsRefreshInterval == null || metricsRefreshInterval.isNegative() || metricsRefreshInterval.isZero()) {
      throw new IllegalArgumentException("metricsRefreshInterval must be positive, was " + metricsRefreshInterval);
    }
    return ConsumerMetrics.build(meterRegistry, metricsRefreshInterval, config, collaborators, create,
        attachMetrics);
  }

  /**
   * The config of this builder's shared settings with the groups a transport's builder made: each group is
   * validated when it is made, so a transport's builder makes them in the order its errors should come in.
   */
  final ConsumerConfig config(ConsumerConfig.Reading reading, ConsumerConfig.Retries retries,
      ConsumerConfig.TransportSettings transport) {
    return new ConsumerConfig(schema, keyPrefix, topic, group,
        consumerName != null ? consumerName : ConsumerNames.generate(), reading, retries,
        new ConsumerConfig.Upkeep(inboxRetention, retryRequestInterval), transport);
  }

  /** How this builder's consumer reads; validated. */
  final ConsumerConfig.Reading reading() {
    return new ConsumerConfig.Reading(workers, batchSize, block, redisPoolWait);
  }

  /** How batches are settled: whose transactions, and whether ghosts are refused. */
  final SettleOptions settling() {
    return new SettleOptions(transactions, refuseGhosts);
  }

  /** The clock for backoffs, ages and deadlines. Defaults to the system UTC clock. */
  public B clock(Clock clock) {
    this.clock = clock;
    return self();
  }

  /** The validated settings this builder would build with. */
  public abstract ConsumerConfig config();

  /** Validates the settings and builds the consumer; nothing runs until it is started or polled. */
  public abstract HandoffConsumer build();
}
