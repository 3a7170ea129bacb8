package dev.handoff.ledger.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import org.slf4j.LoggerFactory;

/** Adjusts log levels for a command (the configuration itself is chosen before the first logger exists). */
public final class Logging {

  private Logging() {}

  /** Gives handoff's loggers back the level they had when it was saved. */
  interface Restore {
    void close();
  }

  /** Saves the level of handoff's own loggers, to be restored when the returned handle is closed. */
  static Restore saved() {
    if (LoggerFactory.getLogger("dev.handoff") instanceof Logger logger) {
      Level before = logger.getLevel();
      return () -> logger.setLevel(before);
    }
    return () -> {};
  }

  /** Sets the level of handoff's own loggers (library and ledger). */
  public static void handoff(String level) {
    if (LoggerFactory.getLogger("dev.handoff") instanceof Logger logger) {
      logger.setLevel(Level.toLevel(level));
    }
  }
}
