package dev.handoff.outbox.internal.micrometer;

import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxConfig;
import dev.handoff.outbox.OutboxFullException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An {@link Outbox} that counts what it appends and what capacity refused, per topic. It counts appends, not
 * commits: a transaction that rolls back after an append is still counted (the relay's published counter counts
 * what committed). The outbox runs no query of its own for metrics; the depth gauges are the relay's.
 */
public final class MeteredOutbox implements Outbox {

  private final Outbox delegate;
  private final MeterRegistry registry;
  private final Map<String, Counter> appended = new ConcurrentHashMap<>();
  private final Map<String, Counter> refused = new ConcurrentHashMap<>();

  public MeteredOutbox(Outbox delegate, MeterRegistry registry) {
    this.delegate = delegate;
    this.registry = registry;
  }

  @Override
  public AppendedMessage append(Connection tx, Message message) {
    try {
      AppendedMessage a = delegate.append(tx, message);
      appended(message.topic()).increment();
      return a;
    } catch (OutboxFullException e) {
      refused(message.topic()).increment();
      throw e;
    }
  }

  @Override
  public List<AppendedMessage> appendAll(Connection tx, List<Message> messages) {
    try {
      List<AppendedMessage> all = delegate.appendAll(tx, messages);
      for (Message m : messages) {
        appended(m.topic()).increment();
      }
      return all;
    } catch (OutboxFullException e) {
      refused(e.topic()).increment(messages.stream().filter(m -> m.topic().equals(e.topic())).count());
      throw e;
    }
  }

  @Override
  public OutboxConfig config() {
    return delegate.config();
  }

  private Counter appended(String topic) {
    return appended.computeIfAbsent(topic, t -> Counter.builder("handoff.outbox.appended").tag("topic", t)
        .description("messages appended to the outbox (in transactions that may still roll back)")
        .register(registry));
  }

  private Counter refused(String topic) {
    return refused.computeIfAbsent(topic, t -> Counter.builder("handoff.outbox.refused").tag("topic", t)
        .description("messages the topic's capacity policy refused (OutboxFullException)").register(registry));
  }
}
