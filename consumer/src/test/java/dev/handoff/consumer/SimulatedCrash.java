package dev.handoff.consumer;

/** Thrown by a fault hook to stop a consumer dead at a chosen point, as a process crash would. */
final class SimulatedCrash extends Error {
  private static final long serialVersionUID = 1L;

  SimulatedCrash(String where) {
    super("simulated crash " + where);
  }
}
