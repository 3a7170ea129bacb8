package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.internal.Settled.Dead;
import dev.handoff.consumer.internal.Settled.Failure;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;

/**
 * Tells the log and the listener what a settled batch did, in the words of its transport, and counts the
 * duplicates skipped. The listener is guarded: whatever it throws, an {@code Error} included, is logged and
 * ignored, so that a listener can never stop a worker or the housekeeping that reports to it.
 *
 * <p>Thread-safe: the counter is atomic and the rest is immutable.
 */
final class OutcomeReporter {

  private final Logger log;
  private final String label;
  private final String unit;
  private final ConsumerListener listener;
  private final AtomicLong duplicatesSkipped = new AtomicLong();

  /**
   * @param log the consumer's own logger, so that log lines keep the category they always had
   * @param label how a worker is named in the log ({@code "Consumer"}, {@code "List consumer"})
   * @param unit what the transport calls one delivery ({@code "entry"}, {@code "element"})
   */
  OutcomeReporter(Logger log, String label, String unit, ConsumerListener listener) {
    this.log = log;
    this.label = label;
    this.unit = unit;
    this.listener = listener;
  }

  long duplicatesSkipped() {
    return duplicatesSkipped.get();
  }

  /** Everything one worker's batch did: handled, duplicates, failures with their backoff, dead letters, lost. */
  void report(String worker, Settled s, Map<Delivery, Duration> backoffs, long nanos) {
    handled(s);
    for (Failure f : s.failed) {
      Delivery d = f.delivery();
      Duration wait = backoffs.get(d);
      log.info("{} {}: message {} ({} {} of {}, delivery {}) failed, retry in {}: {}", label, worker,
          d.messageId(), unit, d.id, d.streamKey, d.deliveries, wait, f.error().toString());
      if (d.message != null) {
        emit(l -> l.failed(d.message, f.error(), wait));
      }
    }
    for (Dead x : s.dead) {
      Delivery d = x.delivery();
      log.warn("{} {}: {} {} of {} (message {}) dead-lettered after {} deliveries: {}", label, worker, unit, d.id,
          d.streamKey, d.messageId(), d.deliveries, x.error().lines().findFirst().orElse(""));
      emit(l -> l.deadLettered(d.streamKey, d.id, d.messageId(), x.error()));
    }
    for (Delivery d : s.lost) {
      log.warn("{} {}: pending {} {} of {} has no payload any more (trimmed or deleted); recorded as lost in"
          + " dead_letter and acknowledged", label, worker, unit, d.id, d.streamKey);
      emit(l -> l.lost(d.streamKey, d.id));
    }
    if (s.committed() > 0) {
      emit(l -> l.batchCommitted(s.committed(), Duration.ofNanos(nanos)));
    }
  }

  /** Counts the duplicates skipped, then tells the listener what was handled and what was a duplicate. */
  void handled(Settled s) {
    duplicatesSkipped.addAndGet(s.duplicates.size());
    for (Delivery d : s.handled) {
      emit(l -> l.handled(d.message));
    }
    for (Delivery d : s.duplicates) {
      if (d.message != null) {
        emit(l -> l.duplicate(d.message));
      }
    }
  }

  /** Calls the listener; a listener that throws must not stop a worker or the housekeeping. */
  void emit(Consumer<ConsumerListener> call) {
    try {
      call.accept(listener);
    } catch (Throwable e) {
      // An Error from a listener must not kill the worker that reports to it.
      log.warn("Consumer listener threw; ignored", e);
    }
  }
}
