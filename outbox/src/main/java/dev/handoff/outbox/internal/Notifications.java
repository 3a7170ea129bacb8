package dev.handoff.outbox.internal;

/** The PostgreSQL notification channel on which appends wake relays: one per schema, the payload is the topic. */
public final class Notifications {

  private Notifications() {}

  public static String channel(String schema) {
    return "handoff_" + schema;
  }
}
