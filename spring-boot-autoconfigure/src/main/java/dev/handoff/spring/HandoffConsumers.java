package dev.handoff.spring;

import dev.handoff.consumer.HandoffConsumer;
import java.util.Map;
import java.util.Optional;

/**
 * The consumers the starter runs for the application's {@link HandoffListener} methods, one per topic and group:
 * for their status, dead letters and retries, and for replaying old messages in verification tests.
 *
 * <p>Thread-safe. Empty before the application context has started and after it has stopped.
 */
public interface HandoffConsumers {

  /** The running consumer of {@code group} on {@code topic}, if its listener exists and the group is enabled. */
  Optional<HandoffConsumer> consumer(String topic, String group);

  /** Every running consumer, by {@code topic/group}. */
  Map<String, HandoffConsumer> all();
}
