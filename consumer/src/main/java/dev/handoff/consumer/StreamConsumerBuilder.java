package dev.handoff.consumer;

import dev.handoff.consumer.internal.DefaultStreamConsumer;
import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import javax.sql.DataSource;

/** Builds a {@link StreamConsumer}. Not thread-safe; the built consumer is. */
public final class StreamConsumerBuilder extends ConsumerBuilder<StreamConsumerBuilder> {

  public static final Duration DEFAULT_MIN_IDLE = Duration.ofSeconds(30);
  public static final Duration DEFAULT_RECLAIM_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_STATUS_SCAN_LIMIT = 10_000;

  private Duration minIdle = DEFAULT_MIN_IDLE;
  private Duration leaseRenewInterval;
  private Duration reclaimInterval = DEFAULT_RECLAIM_INTERVAL;
  private StartPosition startPosition = StartPosition.BEGINNING;
  private int statusScanLimit = DEFAULT_STATUS_SCAN_LIMIT;
  private Ordering ordering = Ordering.NONE;

  StreamConsumerBuilder(DataSource dataSource, RedisConnectionSpec redis) {
    super(dataSource, redis);
  }

  @Override
  StreamConsumerBuilder self() {
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

  /**
   * How many entries a status call counts per stream before it reports a lower bound. Defaults to 10,000: counting
   * costs Redis about 2 µs per entry, done in pages of 500 so that no single script holds the server for long.
   */
  public StreamConsumerBuilder statusScanLimit(int limit) {
    this.statusScanLimit = limit;
    return this;
  }

  /**
   * Whether the group applies each shard's messages in stream order: {@link Ordering#perShard()} gives every shard
   * one owner among the group's consumers, commits its messages in order, blocks only that shard behind a failing
   * message, and fences a former owner's late commit; see {@link Ordering} for what it guarantees and costs.
   * Every consumer of a group must say the same. Defaults to {@link Ordering#NONE}.
   */
  public StreamConsumerBuilder ordering(Ordering ordering) {
    this.ordering = ordering;
    return this;
  }

  /** The validated settings this builder would build with, its own in {@link ConsumerConfig.StreamSettings}. */
  @Override
  public ConsumerConfig config() {
    ConsumerConfig.Reading reading = reading();
    Duration renew = leaseRenewInterval != null ? leaseRenewInterval : minIdle == null ? null : minIdle.dividedBy(3);
    ConsumerConfig.StreamSettings streams =
        new ConsumerConfig.StreamSettings(minIdle, renew, reclaimInterval, startPosition, statusScanLimit,
            ordering);
    Duration max = maxBackoff != null ? maxBackoff : minIdle;
    Duration initial = initialBackoff;
    if (maxBackoff == null && initial != null && initial.compareTo(max) > 0) {
      initial = max; // only the defaults conflict here (minIdle below 1 s): follow minIdle
    }
    return config(reading, new ConsumerConfig.Retries(maxDeliveries, initial, max, failureIsolation), streams);
  }

  /**
   * Validates the settings and builds the consumer. Nothing runs until {@link StreamConsumer#start()} or
   * {@link StreamConsumer#pollOnce()}.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   * @throws NullPointerException naming a required setting that is missing
   */
  @Override
  public StreamConsumer build() {
    return buildWith((config, collaborators) -> new DefaultStreamConsumer(config, collaborators, dataSource,
        settling(), redis, redisCluster, redisConfig), (c, metrics) -> c.attachMetrics(metrics));
  }
}
