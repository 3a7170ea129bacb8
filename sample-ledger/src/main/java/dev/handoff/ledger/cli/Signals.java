package dev.handoff.ledger.cli;

import java.util.concurrent.CountDownLatch;
import sun.misc.Signal;

/** Waits for SIGTERM or SIGINT (Ctrl-C), so a long-running command can drain and exit 0. */
final class Signals {

  private Signals() {}

  /** A latch released by the first SIGTERM or SIGINT. */
  static CountDownLatch termination() {
    CountDownLatch stop = new CountDownLatch(1);
    Signal.handle(new Signal("TERM"), s -> stop.countDown());
    Signal.handle(new Signal("INT"), s -> stop.countDown());
    return stop;
  }
}
