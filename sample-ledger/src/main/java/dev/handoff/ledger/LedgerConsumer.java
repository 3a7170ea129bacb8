package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.FailureIsolation;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.Transport;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ledger consumer: handoff's {@link StreamConsumer} (or its {@link ListConsumer}), set up by the caller with
 * handoff's own builder (servers, schema, topic, group, tuning), with the {@link Ledger} as its batch handler and
 * {@link ConsumerCounters} as its listener. For each batch, in one transaction: the inbox markers, then one insert
 * for the charges of every message whose marker is new; commit; XACK (or LREM). So a payment message is charged once
 * per group however often it is delivered: after a crash between commit and the acknowledgement, a reclaim (or a
 * return by the reaper), a replay or a relay re-send.
 *
 * <p>The batch handler is used rather than a per-message handler because it writes a batch's charges in one round
 * trip, which runs near raw-insert speed (consumer README: about 3x a per-message handler). Its cost: when a batch
 * fails (a poison payment), handoff bisects it, so the handler runs again on halves. This class is thread-safe.
 */
public final class LedgerConsumer implements AutoCloseable {

  /** The consumer group of the ledger, which is also the {@code charge.ledger} it books into. */
  public static final String DEFAULT_GROUP = "ledger";

  private static final Logger log = LoggerFactory.getLogger(LedgerConsumer.class);

  private final HandoffConsumer consumer;
  private final ConsumerCounters counters = new ConsumerCounters();
  private final DataSource dataSource;
  private final String schema;
  private final String group;
  private final boolean persistStats;
  private ScheduledExecutorService flusher;

  private LedgerConsumer(ConsumerBuilder<?> builder, DataSource dataSource, boolean persistStats,
      ConsumerListener alsoTell) {
    ConsumerConfig config = builder.config();
    this.dataSource = dataSource;
    this.schema = config.schema();
    this.group = config.group();
    this.persistStats = persistStats;
    Ledger ledger = new Ledger(schema, group);
    this.consumer = builder
        .batchHandler(ledger::charge)
        .failureIsolation(FailureIsolation.OPTIMISTIC_BATCH)
        .listener(alsoTell == null ? counters : new ListenerPair(counters, alsoTell))
        .build();
  }

  /**
   * The ledger on {@code builder}'s consumer, its counters flushed to {@code consumer_stats} every second and on
   * close.
   *
   * @param dataSource where the counters are written: the consumer's database
   */
  public static LedgerConsumer of(ConsumerBuilder<?> builder, DataSource dataSource) {
    return new LedgerConsumer(builder, dataSource, true, null);
  }

  /**
   * The ledger on {@code builder}'s consumer.
   *
   * @param persistStats whether the counters are flushed to {@code consumer_stats}
   * @param alsoTell one more listener, called after the counters, or null
   */
  public static LedgerConsumer of(ConsumerBuilder<?> builder, DataSource dataSource, boolean persistStats,
      ConsumerListener alsoTell) {
    return new LedgerConsumer(builder, dataSource, persistStats, alsoTell);
  }

  /** Starts the workers (and, when enabled, the once-a-second flush of the counters). */
  public void start() {
    consumer.start();
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
    if (consumer instanceof StreamConsumer s) {
      return s;
    }
    throw new IllegalStateException("ledger consumer of group '" + group + "' runs on the list transport");
  }

  /**
   * The handoff list consumer underneath.
   *
   * @throws IllegalStateException if this ledger consumer runs on the stream transport (see {@link #consumer()})
   */
  public ListConsumer listConsumer() {
    if (consumer instanceof ListConsumer l) {
      return l;
    }
    throw new IllegalStateException("ledger consumer of group '" + group + "' runs on the stream transport");
  }

  /** The handoff consumer underneath, whichever the transport. */
  public HandoffConsumer handoff() {
    return consumer;
  }

  public Transport transport() {
    return consumer instanceof ListConsumer ? Transport.LIST : Transport.STREAM;
  }

  public ConsumerCounters counters() {
    return counters;
  }

  public String group() {
    return group;
  }

  public List<DeadLetter> deadLetters(int limit) {
    return consumer.deadLetters(limit);
  }

  /** Stops reading, lets batches in flight finish until {@code deadline}, flushes the counters. */
  public boolean close(Duration deadline) {
    boolean clean = consumer.close(deadline);
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
}
