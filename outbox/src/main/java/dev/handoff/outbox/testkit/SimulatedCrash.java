package dev.handoff.outbox.testkit;

/**
 * Test seam: thrown by a fault hook ({@link RelayFaults}, or the consumers' {@code ConsumerFaults}) to stop a relay
 * or consumer thread dead at that point, as a killed process would: handoff lets it through, without clean-up,
 * retry or rollback of what Redis already accepted, and logs one line for it. Every other {@link Throwable} a
 * handoff thread meets is logged with its stack trace and survived. Not for production use.
 */
public final class SimulatedCrash extends Error {

  private static final long serialVersionUID = 1L;

  /** A crash at {@code where}, which the log line names. */
  public SimulatedCrash(String where) {
    super("simulated crash " + where);
  }
}
