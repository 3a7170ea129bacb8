package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.FailureIsolation;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.InboxRetention;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListConsumerBuilder;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ledger consumer: handoff's {@link StreamConsumer} (or, with {@link Transport#LIST}, its {@link ListConsumer})
 * on the {@value PaymentEvents#TOPIC} topic with the {@link Ledger} as its batch handler. For each batch, in one
 * transaction: the inbox markers, then one insert for the charges of every message whose marker is new; commit;
 * XACK (or LREM). So a payment message is charged once per group however often it is delivered: after a crash
 * between commit and the acknowledgement, a reclaim (or a return by the reaper), a replay or a relay re-send.
 *
 * <p>On lists the stream-named settings map as the library maps them: {@code minIdle} is the heartbeat TTL (a
 * consumer silent that long is presumed dead and its processing lists are returned), {@code reclaimInterval} the
 * reaper interval. All consumers of the lists must share one group (a list element goes to one consumer).
 *
 * <p>The batch handler is used rather than a per-message handler because it writes a batch's charges in one round
 * trip, which runs near raw-insert speed (consumer README: about 3x a per-message handler). Its cost: when a batch
 * fails (a poison payment), handoff bisects it, so the handler runs again on halves. This class is thread-safe.
 */
public final class LedgerConsumer implements AutoCloseable {

  /** The consumer group of the ledger, which is also the {@code charge.ledger} it books into. */
  public static final String DEFAULT_GROUP = "ledger";

  private static final Logger log = LoggerFactory.getLogger(LedgerConsumer.class);

  private final Transport transport;
  private final StreamConsumer consumer;
  private final ListConsumer listConsumer;
  private final ConsumerCounters counters;
  private final DataSource dataSource;
  private final String schema;
  private final String group;
  private final boolean persistStats;
  private ScheduledExecutorService flusher;

  private LedgerConsumer(Builder b) {
    this.dataSource = b.dataSource;
    this.schema = b.schema;
    this.group = b.group;
    this.persistStats = b.persistStats;
    this.counters = new ConsumerCounters();
    Ledger ledger = new Ledger(b.schema, b.group);
    ConsumerListener extra = b.listener;
    // handoff backs off by resetting idle time, so a backoff cannot exceed minIdle: follow a short minIdle.
    Duration maxBackoff = b.maxBackoff.compareTo(b.minIdle) > 0 ? b.minIdle : b.maxBackoff;
    Duration initialBackoff = b.initialBackoff.compareTo(maxBackoff) > 0 ? maxBackoff : b.initialBackoff;
    this.transport = b.transport;
    ConsumerListener listener = extra == null ? counters : new ListenerPair(counters, extra);
    if (b.transport == Transport.LIST) {
      ListConsumerBuilder builder = withLedgerSettings(ListConsumer.builder(b.dataSource, b.redis), b, ledger, listener)
          .heartbeatTtl(b.minIdle)
          .reapInterval(b.reclaimInterval)
          .maxDeliveries(b.maxDeliveries)
          .backoff(initialBackoff, maxBackoff);
      if (b.consumerName != null) {
        builder.consumerName(b.consumerName);
      }
      this.listConsumer = builder.build();
      this.consumer = null;
    } else {
      StreamConsumerBuilder builder = withLedgerSettings(StreamConsumer.builder(b.dataSource, b.redis), b, ledger,
          listener)
          .minIdle(b.minIdle)
          .reclaimInterval(b.reclaimInterval)
          .maxDeliveries(b.maxDeliveries)
          .backoff(initialBackoff, maxBackoff);
      if (b.consumerName != null) {
        builder.consumerName(b.consumerName);
      }
      this.consumer = builder.build();
      this.listConsumer = null;
    }
  }

  /** The settings both transports' builders take alike. */
  private static <B extends ConsumerBuilder<B>> B withLedgerSettings(B builder, Builder b, Ledger ledger,
      ConsumerListener listener) {
    return builder
        .schema(b.schema)
        .keyPrefix(b.keyPrefix)
        .topic(b.topic)
        .group(b.group)
        .batchHandler(ledger::charge)
        .failureIsolation(FailureIsolation.OPTIMISTIC_BATCH)
        .workers(b.workers)
        .batchSize(b.batchSize)
        .block(b.block)
        .inboxRetention(b.inboxRetention)
        .listener(listener)
        .faults(b.faults);
  }

  public static Builder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new Builder(dataSource, redis);
  }

  /** Starts the workers (and, when enabled, the once-a-second flush of the counters). */
  public void start() {
    handoff().start();
    if (persistStats) {
      flusher = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "ledger-stats-" + group);
        t.setDaemon(true);
        return t;
      });
      flusher.scheduleWithFixedDelay(this::flushQuietly, 1, 1, TimeUnit.SECONDS);
    }
  }

  /**
   * The handoff stream consumer underneath (status, dead letters, replay).
   *
   * @throws IllegalStateException if this ledger consumer runs on the list transport (see {@link #listConsumer()})
   */
  public StreamConsumer consumer() {
    if (consumer == null) {
      throw new IllegalStateException("ledger consumer of group '" + group + "' runs on the list transport");
    }
    return consumer;
  }

  /**
   * The handoff list consumer underneath.
   *
   * @throws IllegalStateException if this ledger consumer runs on the stream transport (see {@link #consumer()})
   */
  public ListConsumer listConsumer() {
    if (listConsumer == null) {
      throw new IllegalStateException("ledger consumer of group '" + group + "' runs on the stream transport");
    }
    return listConsumer;
  }

  /** The handoff consumer underneath, whichever the transport. */
  public HandoffConsumer handoff() {
    return consumer != null ? consumer : listConsumer;
  }

  public Transport transport() {
    return transport;
  }

  public ConsumerCounters counters() {
    return counters;
  }

  public String group() {
    return group;
  }

  public List<DeadLetter> deadLetters(int limit) {
    return handoff().deadLetters(limit);
  }

  /** Stops reading, lets batches in flight finish until {@code deadline}, flushes the counters. */
  public boolean close(Duration deadline) {
    boolean clean = handoff().close(deadline);
    if (flusher != null) {
      flusher.shutdownNow();
      flushQuietly();
    }
    return clean;
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(30));
  }

  private void flushQuietly() {
    try {
      counters.flush(dataSource, schema, group);
    } catch (SQLException | RuntimeException e) {
      log.warn("could not record the counters of consumer group '{}': {}", group, e.toString());
    }
  }

  /** Builds a {@link LedgerConsumer}; defaults suit a production-like run. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private final RedisConnectionSpec redis;
    private String schema = "handoff";
    private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
    private String group = DEFAULT_GROUP;
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

    private Builder(DataSource dataSource, RedisConnectionSpec redis) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.redis = Objects.requireNonNull(redis, "redis");
    }

    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
      return this;
    }

    /** The consumer group, also the ledger's name in {@code charge.ledger}. Defaults to {@value #DEFAULT_GROUP}. */
    public Builder group(String group) {
      this.group = group;
      return this;
    }

    /**
     * Streams (the default) or lists; must be the relay's. On lists {@code minIdle} is the heartbeat TTL and
     * {@code reclaimInterval} the reaper interval.
     */
    public Builder transport(Transport transport) {
      this.transport = Objects.requireNonNull(transport, "transport");
      return this;
    }

    /** The payments topic as the producers write it. Defaults to {@link PaymentEvents#TOPIC_CONFIG}. */
    public Builder topic(TopicConfig topic) {
      this.topic = topic;
      return this;
    }

    /** A stable consumer name lets a restarted process replay its own pending entries at once. */
    public Builder consumerName(String consumerName) {
      this.consumerName = consumerName;
      return this;
    }

    /** Worker threads. Defaults to 2. */
    public Builder workers(int workers) {
      this.workers = workers;
      return this;
    }

    /** Entries per batch transaction. Defaults to 100. */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** How long a read blocks for new entries. Defaults to 500 ms. */
    public Builder block(Duration block) {
      this.block = block;
      return this;
    }

    /** How long an entry sits idle before another consumer may claim it. Defaults to 30 s. */
    public Builder minIdle(Duration minIdle) {
      this.minIdle = minIdle;
      return this;
    }

    public Builder reclaimInterval(Duration interval) {
      this.reclaimInterval = interval;
      return this;
    }

    /** Deliveries before a failing message is dead-lettered. Defaults to 10. */
    public Builder maxDeliveries(int maxDeliveries) {
      this.maxDeliveries = maxDeliveries;
      return this;
    }

    /**
     * Backoff of a failed message between deliveries. Defaults to 1 s doubling up to 10 s; both are capped at
     * {@code minIdle}.
     */
    public Builder backoff(Duration initial, Duration max) {
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /** Whether the counters are flushed to {@code consumer_stats} (every second and on close). Defaults to true. */
    public Builder persistStats(boolean persistStats) {
      this.persistStats = persistStats;
      return this;
    }

    /** How long inbox markers are kept; see {@link InboxRetention}. Defaults to {@link InboxRetention#defaults()}. */
    public Builder inboxRetention(InboxRetention retention) {
      this.inboxRetention = Objects.requireNonNull(retention, "inboxRetention");
      return this;
    }

    /** One more listener, called after the counters. */
    public Builder listener(ConsumerListener listener) {
      this.listener = listener;
      return this;
    }

    /** Test seam: where to kill a worker, for the demo's and the tests' faults; see {@link ConsumerFaults}. */
    public Builder faults(ConsumerFaults faults) {
      this.faults = Objects.requireNonNull(faults, "faults");
      return this;
    }

    public LedgerConsumer build() {
      return new LedgerConsumer(this);
    }
  }
}
