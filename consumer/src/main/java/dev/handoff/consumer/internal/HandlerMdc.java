package dev.handoff.consumer.internal;

import dev.handoff.consumer.InboundMessage;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.MDC;

/**
 * The SLF4J MDC while a handler runs, so that its log lines carry the message they are about and the producer's
 * trace: {@value #TRACEPARENT} (when the message has one), {@value #MESSAGE_ID}, {@value #TOPIC}, {@value #GROUP},
 * {@value #SOURCE} (the stream or list key) and {@value #ENTRY_ID} (the stream entry ID; for a list, the element's
 * ID). A batch handler sees only the topic and the group: one call handles many messages. What the keys held before
 * is put back when the scope closes, so nothing leaks to the worker's own lines or to the next message.
 *
 * <p>Not thread-safe; the MDC is per thread, and a scope is opened and closed on the handler's thread.
 */
final class HandlerMdc implements AutoCloseable {

  static final String TRACEPARENT = "traceparent";
  static final String MESSAGE_ID = "handoff.message_id";
  static final String TOPIC = "handoff.topic";
  static final String GROUP = "handoff.group";
  static final String SOURCE = "handoff.source";
  static final String ENTRY_ID = "handoff.entry_id";

  private final Map<String, String> before = new LinkedHashMap<>();

  private HandlerMdc() {}

  /** The MDC of a handler call for {@code m} in {@code group}. */
  static HandlerMdc of(InboundMessage m, String group) {
    HandlerMdc scope = new HandlerMdc();
    scope.put(TOPIC, m.topic());
    scope.put(GROUP, group);
    scope.put(MESSAGE_ID, m.messageId().toString());
    scope.put(SOURCE, m.delivery().streamKey());
    scope.put(ENTRY_ID, m.delivery().streamId());
    scope.put(TRACEPARENT, m.traceparent());
    return scope;
  }

  /** The MDC of a batch handler call on {@code topic} in {@code group}. */
  static HandlerMdc ofBatch(String topic, String group) {
    HandlerMdc scope = new HandlerMdc();
    scope.put(TOPIC, topic);
    scope.put(GROUP, group);
    return scope;
  }

  private void put(String key, String value) {
    if (value == null) {
      return;
    }
    before.put(key, MDC.get(key));
    MDC.put(key, value);
  }

  @Override
  public void close() {
    before.forEach((key, previous) -> {
      if (previous == null) {
        MDC.remove(key);
      } else {
        MDC.put(key, previous);
      }
    });
  }
}
