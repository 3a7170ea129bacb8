package dev.handoff.consumer.internal;

/**
 * Which handler call, if any, runs on the current thread: what lets code around a handler (the test kit's strict
 * data source, an integration that routes the application's data access to the handler's transaction) tell a write
 * made for a message from any other. Set only while handoff runs a handler and cleared when it returns.
 *
 * <p>Thread-safe: the state is per thread.
 */
public final class HandlerScope {

  /** A handler call in progress: its consumer group, and the message or batch it runs for. */
  public record Call(String group, String running) {}

  private static final ThreadLocal<Call> CURRENT = new ThreadLocal<>();

  private HandlerScope() {}

  /** The handler call running on this thread, or null outside one. */
  public static Call current() {
    return CURRENT.get();
  }

  static void enter(String group, String running) {
    CURRENT.set(new Call(group, running));
  }

  static void exit() {
    CURRENT.remove();
  }
}
