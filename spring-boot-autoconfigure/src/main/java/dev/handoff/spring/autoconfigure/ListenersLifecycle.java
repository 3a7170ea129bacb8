package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.StreamConsumerBuilder;
import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.spring.HandoffConsumers;
import dev.handoff.spring.HandoffProperties;
import dev.handoff.spring.HandoffStartupException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.context.SmartLifecycle;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * The consumer groups of the application's {@link dev.handoff.spring.HandoffListener} methods, one consumer per topic
 * and group, each running its batches in transactions of the application's {@link PlatformTransactionManager}.
 * Started with the application context; stopped in Spring's shutdown phase, where each finishes its batch in flight
 * within {@code handoff.shutdown-timeout} or rolls it back and leaves it unacknowledged, pending for the next start.
 *
 * <p>Thread-safe: Spring starts and stops it on one thread; {@link #health()}, {@link #consumer} and {@link #all()}
 * may be read from any.
 */
public final class ListenersLifecycle implements SmartLifecycle, HandoffConsumers {

  private final ListenerMethods methods;
  private final DataSource dataSource;
  private final PlatformTransactionManager transactionManager;
  private final RedisConnectionSpec redis;
  private final HandoffProperties properties;
  private final Map<String, TopicConfig> topics;
  private final Consumer<StreamConsumerBuilder> metrics;
  private volatile Map<String, HandoffConsumer> running = Map.of();

  ListenersLifecycle(ListenerMethods methods, DataSource dataSource, PlatformTransactionManager transactionManager,
      RedisConnectionSpec redis, HandoffProperties properties, Map<String, TopicConfig> topics,
      Consumer<StreamConsumerBuilder> metrics) {
    this.methods = methods;
    this.dataSource = dataSource;
    this.transactionManager = transactionManager;
    this.redis = redis;
    this.properties = properties;
    this.topics = topics;
    this.metrics = metrics;
  }

  @Override
  public synchronized void start() {
    if (!running.isEmpty()) {
      return;
    }
    Map<String, HandoffConsumer> built = new LinkedHashMap<>();
    try {
      for (ListenerMethods.Listener l : methods.listeners()) {
        String name = l.topic() + "/" + l.group();
        HandoffConsumer other = built.get(name);
        if (other != null) {
          throw new HandoffStartupException("two @HandoffListener methods for topic '" + l.topic() + "' and group '"
              + l.group() + "': " + l.describe() + " and another; a group has one handler per topic");
        }
        HandoffProperties.Group settings = properties.getConsumers().getOrDefault(l.group(),
            new HandoffProperties.Group());
        if (!settings.isEnabled()) {
          continue;
        }
        built.put(name, build(l, settings));
      }
      for (HandoffConsumer c : built.values()) {
        c.start();
      }
    } catch (RuntimeException e) {
      built.values().forEach(c -> c.close(Duration.ZERO));
      throw e;
    }
    running = Collections.unmodifiableMap(built);
  }

  private HandoffConsumer build(ListenerMethods.Listener l, HandoffProperties.Group settings) {
    TopicConfig topic = topics.get(l.topic());
    if (topic == null) {
      throw new HandoffStartupException("@HandoffListener " + l.describe() + " names topic '" + l.topic()
          + "', which is not declared: add handoff.topics." + l.topic() + ".shards");
    }
    StreamConsumerBuilder b = StreamConsumer.builder(dataSource, redis)
        .schema(properties.getSchema())
        .keyPrefix(properties.getKeyPrefix())
        .topic(topic)
        .group(l.group())
        .handler(ListenerMethods.handlerOf(l))
        .transactions(new SpringTransactions(transactionManager, dataSource, l.group()))
        .workers(settings.getWorkers())
        .batchSize(settings.getBatchSize())
        .maxDeliveries(settings.getMaxDeliveries())
        .refuseGhosts(settings.isRefuseGhosts())
        .minIdle(settings.getMinIdle())
        .backoff(settings.getInitialBackoff(), null)
        .ordering(settings.isOrdered() ? Ordering.perShard().whenExhausted(settings.getWhenExhausted())
            : Ordering.NONE);
    metrics.accept(b);
    try {
      return b.build();
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new HandoffStartupException("handoff.consumers." + l.group() + ": " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void stop() {
    Map<String, HandoffConsumer> stopping = running;
    running = Map.of();
    long deadline = System.nanoTime() + properties.getShutdownTimeout().toNanos();
    List<Thread> closers = new ArrayList<>();
    for (HandoffConsumer c : stopping.values()) {
      // All groups drain at once, within one timeout between them.
      Thread t = new Thread(() -> c.close(Duration.ofNanos(Math.max(0, deadline - System.nanoTime()))),
          "handoff-stop-" + c.config().group());
      t.start();
      closers.add(t);
    }
    for (Thread t : closers) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  @Override
  public boolean isRunning() {
    return !running.isEmpty();
  }

  /** Stops before the relay, so that whatever the listeners append on their way out is still published. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE - 1;
  }

  @Override
  public Optional<HandoffConsumer> consumer(String topic, String group) {
    return Optional.ofNullable(running.get(topic + "/" + group));
  }

  @Override
  public Map<String, HandoffConsumer> all() {
    return running;
  }

  /** Each running group's health, by {@code topic/group}. */
  public Map<String, Health> health() {
    Map<String, Health> out = new LinkedHashMap<>();
    running.forEach((name, c) -> out.put(name, c.health()));
    return out;
  }
}
