package dev.handoff.consumer.internal;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import redis.clients.jedis.exceptions.JedisException;

/** One worker of either transport, as {@link #run} drives it on its own thread. */
interface WorkerLoop {

  /** One blocking step; returns the database failure that left work unsettled, or null. */
  Throwable blockingStep();

  /** Reports a step that returned a database failure; the loop then pauses. */
  void databaseFailed(Throwable error);

  /** Reports Redis as unavailable while the consumer still runs; the loop then pauses. */
  void redisFailed(JedisException e);

  /** Reports a step that went through, after failures or not. */
  void stepSucceeded();

  /** Handles any other failure of a step, an Error included: true to pause and go on, false to end the loop. */
  boolean failed(Throwable e);

  /**
   * Runs {@code w} while {@code running} holds. Failures pause it with a jittered backoff that grows with
   * consecutive failures (100 ms doubling to 5 s); {@code stopping} cuts the pause short.
   */
  static void run(WorkerLoop w, BooleanSupplier running, CountDownLatch stopping) {
    int errors = 0;
    while (running.getAsBoolean()) {
      try {
        Throwable databaseError = w.blockingStep();
        if (databaseError != null) {
          w.databaseFailed(databaseError);
          pause(errors++, stopping);
        } else {
          errors = 0;
          w.stepSucceeded();
        }
      } catch (JedisException e) {
        // Once closed (an abandoned batch interrupted, or the connections gone), a Redis failure ends the loop.
        if (!running.getAsBoolean()) {
          break;
        }
        w.redisFailed(e);
        pause(errors++, stopping);
      } catch (VirtualMachineError e) {
        throw e; // out of memory or stack: the thread ends, and the consumer's worker check gives it a new one
      } catch (Throwable e) {
        // An Error too: a worker that died silently would leave the consumer saying RUNNING with no one working.
        if (!w.failed(e)) {
          break;
        }
        pause(errors++, stopping);
      }
    }
  }

  private static void pause(int failures, CountDownLatch stopping) {
    long max = Math.min(5_000, 100L << Math.min(failures, 6));
    long wait = max / 2 + ThreadLocalRandom.current().nextLong(max / 2 + 1);
    try {
      stopping.await(wait, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
