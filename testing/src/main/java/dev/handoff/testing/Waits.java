package dev.handoff.testing;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Waiting for a condition on a server, with a deadline: the harness's own, which has no Awaitility. */
final class Waits {

  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private Waits() {}

  /**
   * Returns once {@code condition} holds; checks it every 20 ms.
   *
   * @throws IllegalStateException naming {@code what} when it does not hold within {@code timeout}
   */
  static void until(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("timed out after " + timeout.toMillis() + " ms waiting until " + what);
      }
      LockSupport.parkNanos(POLL_NANOS);
    }
  }
}
