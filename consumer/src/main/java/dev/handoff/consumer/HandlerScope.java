package dev.handoff.consumer;

import dev.handoff.consumer.internal.RunningHandler;
import java.util.Optional;

/**
 * Which handler call, if any, runs on the current thread: what lets code around a handler tell a write made for a
 * message from any other (the test kit's strict data source refuses the application's connections inside one; an
 * integration can route the application's data access to the handler's transaction). Set only while handoff runs a
 * handler, on the thread that runs it, and cleared when the handler returns or throws.
 *
 * <p>Thread-safe: the state is per thread.
 */
public final class HandlerScope {

  /**
   * A handler call in progress.
   *
   * @param group its consumer group
   * @param running the message or batch it runs for, as error lines name it ("message 0190...")
   */
  public record Call(String group, String running) {}

  private HandlerScope() {}

  /** The handler call running on this thread, or empty outside one. */
  public static Optional<Call> current() {
    RunningHandler running = RunningHandler.current();
    return running == null ? Optional.empty() : Optional.of(new Call(running.group(), running.running()));
  }
}
