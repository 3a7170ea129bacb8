package dev.handoff.relay.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** A wait that another thread can cut short; a wake-up that arrives while nobody waits is kept for the next wait. */
final class Waiter {

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition woken = lock.newCondition();
  private boolean pending;

  void wake() {
    lock.lock();
    try {
      pending = true;
      woken.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Waits up to {@code millis} or until woken; returns true if woken. */
  boolean await(long millis) throws InterruptedException {
    lock.lock();
    try {
      long nanos = TimeUnit.MILLISECONDS.toNanos(millis);
      while (!pending && nanos > 0) {
        nanos = woken.awaitNanos(nanos);
      }
      boolean wasWoken = pending;
      pending = false;
      return wasWoken;
    } finally {
      lock.unlock();
    }
  }
}
