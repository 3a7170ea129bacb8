package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.Payment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Producer threads of the benchmark and the soak: each pays {@code perTransaction} payments per transaction (through
 * the payment service, or the raw pipeline's plain inserts), at its share of {@code rate} (or flat out at rate 0),
 * until a deadline. The first failure stops its thread and is kept for the caller.
 *
 * <p>Paced, each session's transactions arrive as a Poisson process at its share of the rate, as independent clients'
 * requests reach a service: the gap before each is drawn from an exponential distribution. Each session draws from
 * a generator seeded by its number among all producers, so that handoff's run and the raw pipeline's see the same
 * schedule, and producer processes different ones. Until 2026-12-07 every session paid at the same instants, a
 * burst of all of them each interval, which no service sees (docs/performance.md, "Arrivals").
 */
final class PacedProducers {

  /** The payments numbered {@code base} to {@code base + count - 1}. */
  interface Payments {
    List<Payment> batch(long base, int count);
  }

  /** Writes one transaction of payments and commits it. */
  interface Pay {
    void pay(List<Payment> batch) throws Exception;
  }

  /** Called right after the {@code count} payments numbered from {@code base} committed, at {@code nanos}. */
  interface Committed {
    void committed(long base, int count, long nanos);
  }

  private final String threadName;
  private final int producers;
  private final int perTransaction;
  private final double rate;
  private final int firstSession;
  private final List<Thread> threads = new ArrayList<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  /**
   * @param rate payments per second, all producers together; 0 is flat out
   * @param firstSession the number of this group's first session among all producers (0 unless it is one of several
   *     producer processes), which seeds its sessions' schedules
   */
  PacedProducers(String threadName, int producers, int perTransaction, double rate, int firstSession) {
    this.threadName = threadName;
    this.producers = producers;
    this.perTransaction = perTransaction;
    this.rate = rate;
    this.firstSession = firstSession;
  }

  /** How a producer's own count of payments becomes the payment numbers it writes. */
  interface Numbering {
    long base(long local, int perTransaction);
  }

  /** Starts the producers, paced from {@code from} and stopping at {@code until} ({@link System#nanoTime()}). */
  void start(long from, long until, Pay pay, Payments payments, Committed committed) {
    start(from, until, pay, payments, committed, (local, pb) -> local);
  }

  /**
   * As {@link #start(long, long, Pay, Payments, Committed)}, with payment numbers from {@code numbering}: one of
   * several producer processes takes every n-th block of numbers, so that together they number densely.
   */
  void start(long from, long until, Pay pay, Payments payments, Committed committed, Numbering numbering) {
    AtomicLong next = new AtomicLong();
    int pb = perTransaction;
    for (int p = 0; p < producers; p++) {
      Schedule schedule = new Schedule(p);
      threads.add(new Thread(() -> {
        try {
          while (true) {
            if (rate > 0) {
              long wait = from + schedule.next() - System.nanoTime();
              if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
              }
            }
            if (System.nanoTime() >= until) {
              return;
            }
            long base = numbering.base(next.getAndAdd(pb), pb);
            List<Payment> batch = payments.batch(base, pb);
            pay.pay(batch);
            committed.committed(base, batch.size(), System.nanoTime());
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, threadName + p));
    }
    threads.forEach(Thread::start);
  }

  /**
   * The payments the paced schedule holds within {@code durationNanos} of its start, all producers together: what
   * they pay at most. Flat out (rate 0) there is no schedule, and this is 0.
   */
  long scheduled(long durationNanos) {
    if (rate <= 0) {
      return 0;
    }
    long transactions = 0;
    for (int p = 0; p < producers; p++) {
      Schedule schedule = new Schedule(p);
      while (schedule.next() < durationNanos) {
        transactions++;
      }
    }
    return transactions * perTransaction;
  }

  /** A session's due times, as offsets from the start in nanoseconds: exponential gaps at its share of the rate. */
  private final class Schedule {

    private final SplittableRandom random;
    private final double meanGapNanos = perTransaction / (rate / producers) * 1e9;
    private double dueNanos;

    Schedule(int session) {
      random = new SplittableRandom(firstSession + session);
    }

    long next() {
      dueNanos += -Math.log(1 - random.nextDouble()) * meanGapNanos;
      return (long) dueNanos;
    }
  }

  /** Waits for every producer to stop. */
  void join() {
    BenchThreads.joinAll(threads);
  }

  /** The first producer failure, or {@code null}. */
  Throwable failure() {
    return failure.get();
  }
}
