package dev.handoff.consumer.internal;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.MessageHandler;
import java.time.Clock;
import java.util.Objects;

/**
 * What a consumer calls out to, as opposed to what it is set to ({@link ConsumerConfig}): the application's handler,
 * the listener, the clock and the fault hooks. They travel beside the config, from the builder to
 * {@link DefaultStreamConsumer} and {@link DefaultListConsumer}, so that instrumenting a consumer (the metrics wrap
 * the handler and the listener) replaces a collaborator without rebuilding its settings.
 *
 * <p>Immutable; the collaborators themselves must be thread-safe when there are several workers.
 *
 * @param handler the application's work per message, or {@code null} when {@code batchHandler} is set
 * @param batchHandler the application's work per batch, or {@code null} when {@code handler} is set
 * @param listener the metrics callbacks; {@link ConsumerListener#NOOP} by default
 * @param clock the source of time for backoffs, ages and deadlines; the system UTC clock by default
 * @param faults the hook called where a crash matters; {@link ConsumerFaults#NONE} by default
 */
public record Collaborators(MessageHandler handler, BatchMessageHandler batchHandler, ConsumerListener listener,
    Clock clock, ConsumerFaults faults) {

  public Collaborators {
    if ((handler == null) == (batchHandler == null)) {
      throw new IllegalArgumentException("exactly one of handler and batchHandler must be set");
    }
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(faults, "faults");
  }

  /** The same with {@code handler} and {@code batchHandler} in place of the handlers (exactly one non-null). */
  public Collaborators withHandlers(MessageHandler handler, BatchMessageHandler batchHandler) {
    return new Collaborators(handler, batchHandler, listener, clock, faults);
  }

  /** The same with {@code listener} in place of the listener. */
  public Collaborators withListener(ConsumerListener listener) {
    return new Collaborators(handler, batchHandler, listener, clock, faults);
  }
}
