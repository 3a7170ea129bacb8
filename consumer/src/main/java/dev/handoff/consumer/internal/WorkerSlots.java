package dev.handoff.consumer.internal;

import dev.handoff.core.Health;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;

/**
 * The worker threads of a started consumer, one slot per worker: what {@code health()} reports of them, and the
 * replacement of a thread that died (a {@link VirtualMachineError}, the one kind of {@link Throwable} a worker does
 * not survive) while the consumer runs. A dead thread's worker is taken over by a new thread under the same
 * consumer name, which first reads that name's unfinished work again (its pending entries or its processing
 * lists), so nothing it held is left behind; the inbox makes a second handling of what it had committed a duplicate.
 *
 * <p>Thread-safe: the slots are a copy-on-write list, a slot's thread is volatile, and {@link #replaceDead} is
 * synchronized (it runs on the housekeeping thread).
 */
final class WorkerSlots {

  private static final class Slot {
    final DeliveryWorker worker;
    final Runnable body;
    final String threadName;
    volatile Thread thread;
    volatile String lastDeath;

    Slot(DeliveryWorker worker, Runnable body, String threadName) {
      this.worker = worker;
      this.body = body;
      this.threadName = threadName;
    }
  }

  private final List<Slot> slots = new CopyOnWriteArrayList<>();
  private final BiFunction<Runnable, String, Thread> newThread;
  private final Logger log;
  private final String label;

  /**
   * @param newThread makes an unstarted worker thread that close waits for
   * @param label how log lines and reasons name the consumer ({@code "Consumer group 'g'"})
   */
  WorkerSlots(BiFunction<Runnable, String, Thread> newThread, Logger log, String label) {
    this.newThread = newThread;
    this.log = log;
    this.label = label;
  }

  /** Starts {@code worker} on a new thread running {@code body}. */
  void start(DeliveryWorker worker, Runnable body, String threadName) {
    Slot s = new Slot(worker, body, threadName);
    slots.add(s);
    Thread t = newThread.apply(s.body, threadName);
    s.thread = t;
    worker.started(t);
    t.start();
  }

  /**
   * Gives every worker whose thread died a new thread, with one ERROR line per death, while {@code running} holds
   * (once the consumer closes, its threads end on purpose).
   *
   * @return how many were replaced
   */
  synchronized int replaceDead(BooleanSupplier running) {
    int replaced = 0;
    for (Slot s : slots) {
      if (!running.getAsBoolean()) {
        break;
      }
      Thread dead = s.thread;
      if (dead == null || dead.isAlive() || dead.getState() == Thread.State.NEW) {
        continue;
      }
      s.lastDeath = dead.getName();
      log.error("{}: worker {} (thread {}) died; starting a new thread for it, which first reads its unfinished"
          + " work again", label, s.worker.name, dead.getName());
      s.worker.replaced();
      Thread t = newThread.apply(s.body, s.threadName);
      s.thread = t;
      s.worker.started(t);
      t.start();
      replaced++;
    }
    return replaced;
  }

  /** The health of the workers of a running consumer. */
  Health health() {
    List<Health.Reason> reasons = new ArrayList<>();
    int dead = 0;
    for (Slot s : slots) {
      Thread t = s.thread;
      DeliveryWorker w = s.worker;
      if (t != null && !t.isAlive() && t.getState() != Thread.State.NEW) {
        dead++;
        reasons.add(new Health.Reason("worker-dead", label + ": worker " + w.name + " (thread " + t.getName()
            + ") is dead; it is replaced at the next housekeeping turn"));
        continue;
      }
      if (w.replacedUnproven()) {
        reasons.add(new Health.Reason("worker-replaced", label + ": worker " + w.name + " runs on a new thread"
            + " after " + s.lastDeath + " died, and has not completed a step yet"));
      }
      String code = w.pauseCode();
      var pause = w.pause();
      if (code != null && pause != null) {
        reasons.add(new Health.Reason(code, label + ": worker " + w.name + " paused since " + pause.since() + " ("
            + pause.retries() + " retries): " + pause.reason()));
      }
    }
    if (!slots.isEmpty() && dead == slots.size()) {
      return new Health(Health.Status.DOWN, reasons);
    }
    return Health.of(reasons);
  }
}
