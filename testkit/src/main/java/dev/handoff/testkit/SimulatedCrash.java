package dev.handoff.testkit;

/**
 * A process crash at one point of a thread, thrown by a test's fault hook ({@code RelayFaults}, {@code
 * ConsumerFaults}). handoff treats it as it treats the JVM's own fatal errors, knowing nothing of this type: a
 * {@link VirtualMachineError} ends the thread where it is thrown, with no clean-up, no retry and no rollback of what
 * Redis already accepted. A relay whose thread ended stops renewing its leases and reports {@code DOWN}; a consumer's
 * worker check gives a dead worker a new thread, which reads the unfinished work again. A synchronous call
 * ({@code relayOnce()}, {@code pollOnce()}) throws it to its caller.
 */
public final class SimulatedCrash extends VirtualMachineError {

  private static final long serialVersionUID = 1L;

  /** A crash at {@code where}, which the log line names. */
  public SimulatedCrash(String where) {
    super("simulated crash " + where);
  }
}
