package dev.handoff.consumer;

import dev.handoff.consumer.internal.DefaultListConsumer;
import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import javax.sql.DataSource;

/** Builds a {@link ListConsumer}. Not thread-safe; the built consumer is. */
public final class ListConsumerBuilder extends ConsumerBuilder<ListConsumerBuilder> {

  /** A consumer whose heartbeat is this old is presumed dead and its elements are returned. */
  public static final Duration DEFAULT_HEARTBEAT_TTL = Duration.ofSeconds(15);
  public static final Duration DEFAULT_REAP_INTERVAL = Duration.ofSeconds(1);

  private Duration heartbeatTtl = DEFAULT_HEARTBEAT_TTL;
  private Duration heartbeatInterval;
  private Duration reapInterval = DEFAULT_REAP_INTERVAL;

  ListConsumerBuilder(DataSource dataSource, RedisConnectionSpec redis) {
    super(dataSource, redis);
  }

  @Override
  ListConsumerBuilder self() {
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

  /** The validated settings this builder would build with, its own in {@link ConsumerConfig.ListSettings}. */
  @Override
  public ConsumerConfig config() {
    Duration interval = heartbeatInterval != null ? heartbeatInterval
        : heartbeatTtl == null ? null : heartbeatTtl.dividedBy(3);
    // The list's own settings first: the backoff's default follows heartbeatTtl, which must be valid to follow.
    ConsumerConfig.ListSettings lists = new ConsumerConfig.ListSettings(heartbeatTtl, interval, reapInterval);
    Duration max = maxBackoff != null ? maxBackoff : heartbeatTtl;
    Duration initial = initialBackoff;
    if (maxBackoff == null && initial != null && initial.compareTo(max) > 0) {
      initial = max;
    }
    return config(reading(), new ConsumerConfig.Retries(maxDeliveries, initial, max, failureIsolation), lists);
  }

  /**
   * Validates the settings and builds the consumer; nothing runs until {@link ListConsumer#start()} or
   * {@link ListConsumer#pollOnce()}.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   */
  @Override
  public ListConsumer build() {
    return buildWith((config, collaborators) -> new DefaultListConsumer(config, collaborators, dataSource,
        settling(), redis, redisCluster, redisConfig), (c, metrics) -> c.attachMetrics(metrics));
  }
}
