package dev.handoff.consumer.internal;

import dev.handoff.consumer.HandlerScope;

/** The per-thread record behind {@link HandlerScope}: set only while handoff runs a handler, cleared when it returns. */
public final class RunningHandler {

  private static final ThreadLocal<HandlerScope.Call> CURRENT = new ThreadLocal<>();

  private RunningHandler() {}

  /** The handler call running on this thread, or null outside one. */
  public static HandlerScope.Call current() {
    return CURRENT.get();
  }

  static void enter(String group, String running) {
    CURRENT.set(new HandlerScope.Call(group, running));
  }

  static void exit() {
    CURRENT.remove();
  }
}
