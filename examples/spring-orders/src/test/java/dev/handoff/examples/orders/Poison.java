package dev.handoff.examples.orders;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Order IDs whose handlers fail after their effect, until a test removes them (the fix). */
final class Poison {

  static final Set<String> KEYS = ConcurrentHashMap.newKeySet();

  private Poison() {}

  static void failIfPoisoned(String key) {
    if (KEYS.contains(key)) {
      throw new IllegalStateException("poisoned order " + key + " fails after its effect");
    }
  }
}
