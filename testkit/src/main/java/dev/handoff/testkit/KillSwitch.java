package dev.handoff.testkit;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ListConsumer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A fault hook that kills the {@link ListConsumer} built with it as its process would be killed, for tests of what
 * the other consumers do about a dead one. Made by {@link ConsumerTestKit#killSwitch(ConsumerFaults)}, given to the
 * builder's {@code faults(...)}; it passes every point to the test's own hook until {@link #kill()}.
 *
 * <pre>{@code
 * KillSwitch process = ConsumerTestKit.killSwitch(testsOwnFaults);
 * ListConsumer a = ListConsumer.builder(dataSource, redis).group("g").consumerName("a").faults(process).build();
 * a.pollOnce();
 * process.kill(); // to its peers a is now a dead process: no heartbeat, its processing lists left as they are
 * }</pre>
 *
 * <p><b>What a kill does.</b> handoff knows nothing of this class: it calls the hook at its named points
 * ({@link ConsumerFaults.Point}), and after the kill the hook freezes each thread of the consumer at the next point it
 * reaches, parked, as a process that stopped. A worker freezes before its next read, or after a commit (the batch
 * stays in its processing list, unacknowledged); the housekeeping thread before its next heartbeat renewal or reaper
 * pass, and with it the heartbeats, the reaper and the worker check. So the consumer takes nothing more, renews no
 * heartbeat and gives nothing back, and once its heartbeats expire another consumer's reaper returns its processing
 * lists. One point does not freeze: a worker inside its batch transaction ends its thread at the commit point with a
 * {@link SimulatedCrash}, so that the transaction rolls back as a dead process's does; a frozen one would keep its
 * row locks, and the consumer that takes the batch over would wait on them.
 *
 * <p>{@link #kill()} does not wait: what a thread began past its point (a read waiting for an element, a heartbeat
 * being sent) completes, as in a process killed an instant later; {@link #frozenThreads()} tells when the threads
 * stopped. A thread that is inside the test's own hook at the kill (the hook may call kill itself) freezes when that
 * hook returns, or ends there if it is inside its batch transaction. Do not poll a killed consumer: {@code pollOnce()}
 * would freeze the calling thread. {@code close()} still frees its threads and connections: each frozen thread ends
 * with a {@link SimulatedCrash} when close interrupts it, and close gives nothing back (the hook throws at
 * {@link ConsumerFaults.Point#BEFORE_GIVE_BACK}), which leaves the processing lists to the reaper.
 *
 * <p>Only a list consumer calls the points of its reads and its housekeeping; a stream consumer calls the batch's
 * two points only, so a switch cannot stop its reads or its lease renewal, and {@link #kill()} refuses until a list
 * consumer has called it.
 *
 * <p>Thread-safe.
 */
public final class KillSwitch implements ConsumerFaults {

  private final ConsumerFaults faults;
  private volatile boolean killed;
  private volatile boolean calledByAListConsumer;
  private final AtomicInteger frozen = new AtomicInteger();

  KillSwitch(ConsumerFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
  }

  /**
   * Kills the consumer built with this switch: from now on each of its threads freezes at the next point it reaches
   * (see the class comment). Killing it again does nothing.
   *
   * @throws IllegalStateException if no list consumer has called this switch yet: it was not given to one, or that
   *     consumer was neither polled nor started and reading, or it was given to a stream consumer
   */
  public void kill() {
    if (!calledByAListConsumer) {
      throw new IllegalStateException("no list consumer has called this kill switch yet: give it to the list"
          + " consumer's builder (faults(...)) and poll or start the consumer before killing it; a stream consumer"
          + " cannot be killed this way");
    }
    killed = true;
  }

  /** Whether {@link #kill()} was called. */
  public boolean killed() {
    return killed;
  }

  /**
   * How many of the killed consumer's threads are frozen now. A test that needs the whole consumer frozen before it
   * goes on (before it pushes more work, say) waits for its workers plus its housekeeping thread.
   */
  public int frozenThreads() {
    return frozen.get();
  }

  @Override
  public void at(Point point) {
    if (point != Point.BEFORE_COMMIT && point != Point.AFTER_COMMIT) {
      calledByAListConsumer = true;
    }
    if (!killed) {
      faults.at(point);
      if (!killed) {
        return;
      }
      // Killed while in the test's own hook (by it, say): the thread goes no further than a dead process's would.
    }
    switch (point) {
      case BEFORE_COMMIT -> throw new SimulatedCrash("of a killed consumer's worker, inside its batch transaction");
      case BEFORE_GIVE_BACK -> throw new IllegalStateException("the consumer was killed: a dead process gives nothing"
          + " back");
      default -> freeze(point);
    }
  }

  /** Parks the thread for good; only close's interrupt ends it, as the thread's death, with nothing cleaned up. */
  private void freeze(Point point) {
    frozen.incrementAndGet();
    try {
      while (!Thread.currentThread().isInterrupted()) {
        LockSupport.park(this);
      }
    } finally {
      frozen.decrementAndGet();
    }
    throw new SimulatedCrash("of a killed consumer's thread, frozen at " + point + ", ended by close");
  }
}
