package dev.handoff.ledger.demo;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboxRetention;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.PaymentEvents;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Builds the sample's {@link LedgerConsumer} for the demo and the benchmarks, with one set of settings for either
 * transport, mapped as handoff maps them: on lists {@code minIdle} is the heartbeat TTL (a consumer silent that long
 * is presumed dead and its processing lists are returned) and {@code reclaimInterval} the reaper interval.
 * Defaults suit a production-like run. Not thread-safe.
 */
public final class LedgerConsumerBuilder {
  private final DataSource dataSource;
  private final RedisConnectionSpec redis;
  private String schema = "handoff";
  private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
  private String group = LedgerConsumer.DEFAULT_GROUP;
  private Transport transport = Transport.STREAM;
  private TopicConfig topic = PaymentEvents.TOPIC_CONFIG;
  private String consumerName;
  private int workers = 2;
  private int batchSize = 100;
  private Duration block = Duration.ofMillis(500);
  private Duration minIdle = StreamConsumerBuilder.DEFAULT_MIN_IDLE;
  private Duration reclaimInterval = StreamConsumerBuilder.DEFAULT_RECLAIM_INTERVAL;
  private int maxDeliveries = StreamConsumerBuilder.DEFAULT_MAX_DELIVERIES;
  private Duration initialBackoff = StreamConsumerBuilder.DEFAULT_INITIAL_BACKOFF;
  private Duration maxBackoff = Duration.ofSeconds(10);
  private boolean persistStats = true;
  private ConsumerListener listener;
  private ConsumerFaults faults = ConsumerFaults.NONE;
  private InboxRetention inboxRetention = InboxRetention.defaults();

  public LedgerConsumerBuilder(DataSource dataSource, RedisConnectionSpec redis) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.redis = Objects.requireNonNull(redis, "redis");
  }

  public LedgerConsumerBuilder schema(String schema) {
    this.schema = schema;
    return this;
  }

  public LedgerConsumerBuilder keyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
    return this;
  }

  /** The consumer group, also the ledger's name in {@code charge.ledger}. Defaults to {@value LedgerConsumer#DEFAULT_GROUP}. */
  public LedgerConsumerBuilder group(String group) {
    this.group = group;
    return this;
  }

  /**
   * Streams (the default) or lists; must be the relay's. On lists {@code minIdle} is the heartbeat TTL and
   * {@code reclaimInterval} the reaper interval.
   */
  public LedgerConsumerBuilder transport(Transport transport) {
    this.transport = Objects.requireNonNull(transport, "transport");
    return this;
  }

  /** The payments topic as the producers write it. Defaults to {@link PaymentEvents#TOPIC_CONFIG}. */
  public LedgerConsumerBuilder topic(TopicConfig topic) {
    this.topic = topic;
    return this;
  }

  /** A stable consumer name lets a restarted process replay its own pending entries at once. */
  public LedgerConsumerBuilder consumerName(String consumerName) {
    this.consumerName = consumerName;
    return this;
  }

  /** Worker threads. Defaults to 2. */
  public LedgerConsumerBuilder workers(int workers) {
    this.workers = workers;
    return this;
  }

  /** Entries per batch transaction. Defaults to 100. */
  public LedgerConsumerBuilder batchSize(int batchSize) {
    this.batchSize = batchSize;
    return this;
  }

  /** How long a read blocks for new entries. Defaults to 500 ms. */
  public LedgerConsumerBuilder block(Duration block) {
    this.block = block;
    return this;
  }

  /** How long an entry sits idle before another consumer may claim it. Defaults to 30 s. */
  public LedgerConsumerBuilder minIdle(Duration minIdle) {
    this.minIdle = minIdle;
    return this;
  }

  public LedgerConsumerBuilder reclaimInterval(Duration interval) {
    this.reclaimInterval = interval;
    return this;
  }

  /** Deliveries before a failing message is dead-lettered. Defaults to 10. */
  public LedgerConsumerBuilder maxDeliveries(int maxDeliveries) {
    this.maxDeliveries = maxDeliveries;
    return this;
  }

  /**
   * Backoff of a failed message between deliveries. Defaults to 1 s doubling up to 10 s; both are capped at
   * {@code minIdle}.
   */
  public LedgerConsumerBuilder backoff(Duration initial, Duration max) {
    this.initialBackoff = initial;
    this.maxBackoff = max;
    return this;
  }

  /** Whether the counters are flushed to {@code consumer_stats} (every second and on close). Defaults to true. */
  public LedgerConsumerBuilder persistStats(boolean persistStats) {
    this.persistStats = persistStats;
    return this;
  }

  /** How long inbox markers are kept; see {@link InboxRetention}. Defaults to {@link InboxRetention#defaults()}. */
  public LedgerConsumerBuilder inboxRetention(InboxRetention retention) {
    this.inboxRetention = Objects.requireNonNull(retention, "inboxRetention");
    return this;
  }

  /** One more listener, called after the counters. */
  public LedgerConsumerBuilder listener(ConsumerListener listener) {
    this.listener = listener;
    return this;
  }

  /** Test seam: where to kill a worker, for the demo's and the tests' faults; see {@link ConsumerFaults}. */
  public LedgerConsumerBuilder faults(ConsumerFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
    return this;
  }

  public LedgerConsumer build() {
    // handoff backs off by resetting idle time, so a backoff cannot exceed minIdle: follow a short minIdle.
    Duration max = maxBackoff.compareTo(minIdle) > 0 ? minIdle : maxBackoff;
    Duration initial = initialBackoff.compareTo(max) > 0 ? max : initialBackoff;
    if (transport == Transport.LIST) {
      return LedgerConsumer.of(common(ListConsumer.builder(dataSource, redis).heartbeatTtl(minIdle)
          .reapInterval(reclaimInterval).maxDeliveries(maxDeliveries).backoff(initial, max)
          .consumerName(consumerName)), dataSource, persistStats, listener);
    }
    return LedgerConsumer.of(common(StreamConsumer.builder(dataSource, redis).minIdle(minIdle)
        .reclaimInterval(reclaimInterval).maxDeliveries(maxDeliveries).backoff(initial, max)
        .consumerName(consumerName)), dataSource, persistStats, listener);
  }

  /** The settings both transports' builders take alike. */
  private <B extends ConsumerBuilder<B>> B common(B builder) {
    return builder.schema(schema).keyPrefix(keyPrefix).topic(topic).group(group).workers(workers)
        .batchSize(batchSize).block(block).inboxRetention(inboxRetention).faults(faults);
  }
}
