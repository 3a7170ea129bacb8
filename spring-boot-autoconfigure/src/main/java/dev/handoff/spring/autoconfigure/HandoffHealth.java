package dev.handoff.spring.autoconfigure;

import dev.handoff.core.Health;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The relay's and the listeners' health as one status with details, for either Boot line's Actuator: DOWN if any
 * part is down, UP otherwise (a degraded part is UP with its reasons in the details: it still works).
 */
final class HandoffHealth {

  private final ObjectProvider<RelayLifecycle> relay;
  private final ObjectProvider<ListenersLifecycle> listeners;

  HandoffHealth(ObjectProvider<RelayLifecycle> relay, ObjectProvider<ListenersLifecycle> listeners) {
    this.relay = relay;
    this.listeners = listeners;
  }

  /** Whether every part is up or degraded. */
  record Reading(boolean up, Map<String, Object> details) {}

  Reading read() {
    Map<String, Object> details = new LinkedHashMap<>();
    boolean up = true;
    RelayLifecycle r = relay.getIfAvailable();
    if (r != null) {
      Health h = r.health();
      up &= h.status() != Health.Status.DOWN;
      details.put("relay", describe(h));
    }
    ListenersLifecycle l = listeners.getIfAvailable();
    if (l != null) {
      Map<String, Object> groups = new LinkedHashMap<>();
      for (Map.Entry<String, Health> e : l.health().entrySet()) {
        up &= e.getValue().status() != Health.Status.DOWN;
        groups.put(e.getKey(), describe(e.getValue()));
      }
      details.put("listeners", groups);
    }
    return new Reading(up, details);
  }

  private static Map<String, Object> describe(Health h) {
    List<String> reasons = h.reasons().stream().map(x -> x.code() + ": " + x.message()).toList();
    return reasons.isEmpty() ? Map.of("status", h.status().name())
        : Map.of("status", h.status().name(), "reasons", reasons);
  }
}
