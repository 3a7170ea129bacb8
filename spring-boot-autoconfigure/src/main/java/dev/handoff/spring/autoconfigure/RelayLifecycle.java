package dev.handoff.spring.autoconfigure;

import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.spring.HandoffProperties;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.context.SmartLifecycle;

/**
 * The relay of an application that runs one ({@code handoff.relay.enabled}, the default): started with the
 * application context, stopped in Spring's shutdown phase, where it finishes the batch in flight and releases its
 * shard leases (instead of leaving them to expire) before its Redis client closes.
 *
 * <p>Thread-safe: Spring starts and stops it on one thread; {@link #health()} may be read from any.
 */
public final class RelayLifecycle implements SmartLifecycle {

  private final DataSource dataSource;
  private final RedisConnectionSpec redis;
  private final HandoffProperties properties;
  private final List<TopicConfig> topics;
  private final Consumer<RelayBuilder> metrics;
  private volatile Relay relay;

  RelayLifecycle(DataSource dataSource, RedisConnectionSpec redis, HandoffProperties properties,
      List<TopicConfig> topics, Consumer<RelayBuilder> metrics) {
    this.dataSource = dataSource;
    this.redis = redis;
    this.properties = properties;
    this.topics = topics;
    this.metrics = metrics;
  }

  @Override
  public synchronized void start() {
    if (relay != null || topics.isEmpty()) {
      return;
    }
    RelayBuilder builder = Relay.builder(dataSource, redis)
        .schema(properties.getSchema())
        .keyPrefix(properties.getKeyPrefix())
        .drainTimeout(properties.getShutdownTimeout())
        .leaseTtl(properties.getRelay().getLeaseTtl())
        .idlePollInterval(properties.getRelay().getIdlePollInterval())
        .trimMargin(properties.getRelay().getTrimMargin())
        .pauseOnDatabaseRewind(properties.getRelay().isPauseOnDatabaseRewind());
    topics.forEach(builder::topic);
    metrics.accept(builder);
    Relay built = builder.build();
    try {
      built.start();
    } catch (RuntimeException | Error e) {
      try {
        built.close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    relay = built;
  }

  @Override
  public synchronized void stop() {
    Relay r = relay;
    if (r == null) {
      return;
    }
    try {
      r.close(properties.getShutdownTimeout());
    } finally {
      relay = null;
    }
  }

  @Override
  public boolean isRunning() {
    return relay != null;
  }

  /** Stops after the application's listeners (a lower phase stops later), so their last appends still go out. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE - 2;
  }

  /** The relay's health, or DOWN while it is not running. */
  public Health health() {
    Relay r = relay;
    return r != null ? r.health() : Health.down("not-running", "the relay is not running in this application");
  }

  /** How long a stop may take. */
  Duration shutdownTimeout() {
    return properties.getShutdownTimeout();
  }
}
