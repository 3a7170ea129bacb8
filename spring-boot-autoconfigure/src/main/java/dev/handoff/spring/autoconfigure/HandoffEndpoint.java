package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.GroupStatus;
import dev.handoff.core.Health;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * The {@code handoff} Actuator endpoint: {@code /actuator/handoff} lists the application's consumer groups with
 * their health, and {@code /actuator/handoff/{topic}/{group}} shows one group's backlog, pending entries and dead
 * letters, read from Redis and the database when asked. Not API: its output is documented in docs/spring.md.
 */
@Endpoint(id = "handoff")
public class HandoffEndpoint {

  private final ListenersLifecycle listeners;

  HandoffEndpoint(ListenersLifecycle listeners) {
    this.listeners = listeners;
  }

  @ReadOperation
  public Map<String, Object> groups() {
    Map<String, Object> out = new LinkedHashMap<>();
    listeners.all().forEach((name, consumer) -> out.put(name, health(consumer.health())));
    return Map.of("groups", out);
  }

  @ReadOperation
  public Map<String, Object> group(@Selector String topic, @Selector String group) {
    HandoffConsumer consumer = listeners.consumer(topic, group).orElse(null);
    if (consumer == null) {
      return null; // Actuator answers 404
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("topic", topic);
    out.put("group", group);
    out.put("health", health(consumer.health()));
    GroupStatus status = consumer.status();
    if (status instanceof ConsumerStatus s) {
      out.put("backlog", s.backlog());
      out.put("pending", s.pending());
      out.put("deadLetters", s.deadLetters());
      out.put("drained", s.drained());
      out.put("pausedWorkers", s.paused().size());
    }
    return out;
  }

  private static Map<String, Object> health(Health h) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("status", h.status().name());
    out.put("reasons", h.reasons().stream().map(r -> r.code() + ": " + r.message()).toList());
    return out;
  }
}
