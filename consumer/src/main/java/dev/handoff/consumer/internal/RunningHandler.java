package dev.handoff.consumer.internal;

/**
 * The per-thread record behind {@code HandlerScope}: set only while handoff runs a handler, cleared when it returns.
 *
 * @param group the handler's consumer group
 * @param running the message or batch it runs for
 */
public record RunningHandler(String group, String running) {

  private static final ThreadLocal<RunningHandler> CURRENT = new ThreadLocal<>();

  /** The handler call running on this thread, or null outside one. */
  public static RunningHandler current() {
    return CURRENT.get();
  }

  static void enter(String group, String running) {
    CURRENT.set(new RunningHandler(group, running));
  }

  static void exit() {
    CURRENT.remove();
  }
}
