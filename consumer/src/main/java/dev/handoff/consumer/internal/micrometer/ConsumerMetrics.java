package dev.handoff.consumer.internal.micrometer;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.internal.Collaborators;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.OrderedShard;
import dev.handoff.consumer.status.GroupStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.internal.MetricsRefresher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;

/**
 * A consumer's meters: counters fed by its {@link ConsumerListener} callbacks (counted first, then the user's
 * listener is called), the handler timer (the handler is wrapped), and the gauges of its group read from
 * {@link HandoffConsumer#status()} by a {@link MetricsRefresher}, never by a scrape, so their cost is the status
 * call's, bounded by the status scan limit. Names and tags are documented in docs/operations.md.
 */
public final class ConsumerMetrics implements ConsumerListener {

  private final ConsumerListener delegate;
  private final Counter handled;
  private final Counter duplicates;
  private final Counter failed;
  private final Counter deadLettered;
  private final Counter reclaimed;
  private final Counter lost;
  private final Counter leaseLosses;
  private final Counter pauses;
  private final Timer handler;
  private final AtomicLong deadLetters = new AtomicLong();
  private final AtomicLong paused = new AtomicLong();
  private final ShardGauges[] shards;

  private ConsumerMetrics(MeterRegistry registry, ConsumerConfig config, ConsumerListener delegate) {
    this.delegate = delegate;
    Tags tags = Tags.of("topic", config.topic().name(), "group", config.group());
    handled = counter(registry, "handoff.consumer.handled", tags, "messages whose effects and inbox marker committed");
    duplicates = counter(registry, "handoff.consumer.duplicates", tags,
        "messages skipped because the group's inbox already held them");
    failed = counter(registry, "handoff.consumer.failed", tags,
        "handler attempts that threw (the message's fault); retried after a backoff");
    deadLettered = counter(registry, "handoff.consumer.dead.lettered", tags,
        "entries moved to the dead-letter table (after maxDeliveries, or undecodable)");
    reclaimed = counter(registry, "handoff.consumer.reclaimed", tags,
        "abandoned entries claimed from another consumer (or its dead processing list)");
    lost = counter(registry, "handoff.consumer.lost", tags, "pending entries whose payload was gone from Redis");
    leaseLosses = counter(registry, "handoff.consumer.lease.losses", tags,
        "entries another consumer took over while this one still handled them");
    pauses = counter(registry, "handoff.consumer.pauses", tags,
        "worker pauses caused by the environment (database, Redis, privileges, RetryLaterException)");
    handler = Timer.builder("handoff.consumer.handler").tags(tags)
        .description("time in the application's handler: per message, or per call of a batch handler")
        .register(registry);
    Gauge.builder("handoff.consumer.dead.letters", deadLetters, AtomicLong::doubleValue).tags(tags)
        .description("dead letters of the group still in status dead").register(registry);
    Gauge.builder("handoff.consumer.paused", paused, AtomicLong::doubleValue).tags(tags)
        .description("this instance's workers paused by a failure of the environment now").register(registry);
    shards = new ShardGauges[config.topic().shards()];
    boolean ordered = config.transport() instanceof ConsumerConfig.StreamSettings ss && ss.ordering().ordered();
    for (int s = 0; s < shards.length; s++) {
      shards[s] = new ShardGauges(registry, tags.and("shard", Integer.toString(s)), ordered);
    }
  }

  private static Counter counter(MeterRegistry registry, String name, Tags tags, String description) {
    return Counter.builder(name).tags(tags).description(description).register(registry);
  }

  /**
   * Builds the consumer with its listener and handler instrumented (its settings as they are), and attaches the
   * refresher of its gauges.
   *
   * @param attach hands the refresher to the consumer, which stops it when it closes
   */
  public static <C extends HandoffConsumer> C build(MeterRegistry registry, Duration interval, ConsumerConfig config,
      Collaborators collaborators, BiFunction<ConsumerConfig, Collaborators, C> create,
      BiConsumer<C, MetricsRefresher> attach) {
    ConsumerMetrics metrics = new ConsumerMetrics(registry, config, collaborators.listener());
    C consumer = create.apply(config, metrics.instrument(collaborators));
    attach.accept(consumer, new MetricsRefresher("consumer-" + config.group() + "-" + config.consumerName(),
        interval, () -> metrics.refresh(consumer.status())));
    return consumer;
  }

  /** The same collaborators with the handler timed and this as the listener, which calls theirs. */
  private Collaborators instrument(Collaborators c) {
    MessageHandler h = c.handler();
    MessageHandler timed = h == null ? null : (tx, m) -> {
      long start = System.nanoTime();
      try {
        h.handle(tx, m);
      } finally {
        handler.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
      }
    };
    BatchMessageHandler b = c.batchHandler();
    BatchMessageHandler timedBatch = b == null ? null : (tx, ms) -> {
      long start = System.nanoTime();
      try {
        b.handle(tx, ms);
      } finally {
        handler.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
      }
    };
    return c.withHandlers(timed, timedBatch).withListener(this);
  }

  // ---- the gauges: from one status call per refresh -------------------------------------------------------------

  private void refresh(GroupStatus status) {
    deadLetters.set(status.deadLetters());
    paused.set(status.paused().size());
    if (status instanceof ConsumerStatus cs) {
      for (int s = 0; s < shards.length && s < cs.streams().size(); s++) {
        ConsumerStatus.StreamStatus st = cs.streams().get(s);
        shards[s].set(st.backlog(), st.pending().count(), st.pending().oldestAge());
      }
      long now = System.currentTimeMillis();
      for (OrderedShard o : cs.orderedShards()) {
        if (o.shard() < shards.length) {
          shards[o.shard()].setBlocked(o.blocked() == null ? 0 : Math.max(1, now - o.blocked().since().toEpochMilli()),
              o.blocked() != null && o.blocked().stoppedAt() != null);
        }
      }
    } else if (status instanceof ListStatus ls) {
      for (int s = 0; s < shards.length && s < ls.shards().size(); s++) {
        ListStatus.ShardStatus st = ls.shards().get(s);
        shards[s].set(st.waiting(), st.inProcessing(), st.oldestInProcessingAge());
      }
    }
  }

  private static final class ShardGauges {
    final AtomicLong backlog = new AtomicLong();
    final AtomicLong pending = new AtomicLong();
    final AtomicLong oldestPendingMillis = new AtomicLong();
    final AtomicLong blockedMillis = new AtomicLong();
    final AtomicLong stopped = new AtomicLong();

    ShardGauges(MeterRegistry registry, Tags tags, boolean ordered) {
      if (ordered) {
        TimeGauge.builder("handoff.consumer.shard.blocked.age", blockedMillis, TimeUnit.MILLISECONDS,
                AtomicLong::doubleValue).tags(tags)
            .description("ordered groups: how long the shard has waited behind a failed message (0 while it flows)")
            .register(registry);
        Gauge.builder("handoff.consumer.shard.stopped", stopped, AtomicLong::doubleValue).tags(tags)
            .description("ordered groups: 1 while the shard is stopped for an operator (WhenExhausted.STOP_SHARD)")
            .register(registry);
      }
      Gauge.builder("handoff.consumer.backlog", backlog, AtomicLong::doubleValue).tags(tags)
          .description("entries never delivered to the group (a list's waiting elements); a lower bound past the"
              + " status scan limit").register(registry);
      Gauge.builder("handoff.consumer.pending", pending, AtomicLong::doubleValue).tags(tags)
          .description("entries delivered and not acknowledged (a list's processing lists)").register(registry);
      TimeGauge.builder("handoff.consumer.oldest.pending.age", oldestPendingMillis, TimeUnit.MILLISECONDS,
              AtomicLong::doubleValue).tags(tags)
          .description("age of the oldest pending entry, from its ID (0 when none)").register(registry);
    }

    void setBlocked(long blockedMillis, boolean stopped) {
      this.blockedMillis.set(blockedMillis);
      this.stopped.set(stopped ? 1 : 0);
    }

    void set(long backlog, long pending, Duration oldestPendingAge) {
      this.backlog.set(backlog);
      this.pending.set(pending);
      this.oldestPendingMillis.set(oldestPendingAge == null ? 0 : oldestPendingAge.toMillis());
    }
  }

  // ---- the listener: counters, then the user's listener -----------------------------------------------------------

  @Override
  public void handled(InboundMessage message) {
    handled.increment();
    delegate.handled(message);
  }

  @Override
  public void duplicate(InboundMessage message) {
    duplicates.increment();
    delegate.duplicate(message);
  }

  @Override
  public void failed(InboundMessage message, Throwable error, Duration backoff) {
    failed.increment();
    delegate.failed(message, error, backoff);
  }

  @Override
  public void deadLettered(String streamKey, String streamId, UUID messageId, String error) {
    deadLettered.increment();
    delegate.deadLettered(streamKey, streamId, messageId, error);
  }

  @Override
  public void reclaimed(String streamKey, int count) {
    reclaimed.increment(count);
    delegate.reclaimed(streamKey, count);
  }

  @Override
  public void lost(String streamKey, String streamId) {
    lost.increment();
    delegate.lost(streamKey, streamId);
  }

  @Override
  public void leaseLost(String streamKey, String streamId) {
    leaseLosses.increment();
    delegate.leaseLost(streamKey, streamId);
  }

  @Override
  public void groupRecreated(String streamKey) {
    delegate.groupRecreated(streamKey);
  }

  @Override
  public void batchCommitted(int size, Duration elapsed) {
    delegate.batchCommitted(size, elapsed);
  }

  @Override
  public void paused(String worker, Throwable cause) {
    pauses.increment();
    delegate.paused(worker, cause);
  }

  @Override
  public void resumed(String worker, Duration pausedFor) {
    delegate.resumed(worker, pausedFor);
  }

  @Override
  public void replayProgress(ReplayResult soFar) {
    delegate.replayProgress(soFar);
  }
}
