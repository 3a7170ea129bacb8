package dev.handoff.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * Collects the WARN and ERROR events every logger of the JVM emits while it is open, for tests that assert a run
 * logged nothing alarming (or exactly one expected line). Events of other tests running at the same time in the
 * JVM are collected too: the build runs test classes one after another.
 */
public final class LogCapture implements AutoCloseable {

  private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  private final List<String> lines = new ArrayList<>();
  private final Level threshold;
  private final AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
    @Override
    protected void append(ILoggingEvent e) {
      if (e.getLevel().isGreaterOrEqual(threshold)) {
        String line = e.getLevel() + " " + e.getLoggerName() + " [" + e.getThreadName() + "] "
            + e.getFormattedMessage()
            + (e.getThrowableProxy() != null ? " (" + e.getThrowableProxy().getClassName() + ": "
                + e.getThrowableProxy().getMessage() + ")" : "");
        synchronized (lines) {
          lines.add(line);
        }
      }
    }
  };

  private LogCapture(Level threshold) {
    this.threshold = threshold;
  }

  /** Starts collecting WARN and ERROR events. */
  public static LogCapture start() {
    return start(Level.WARN);
  }

  /** Starts collecting INFO events too: what a WARN is followed by (see {@link #lines()}). */
  public static LogCapture startWithInfo() {
    return start(Level.INFO);
  }

  private static LogCapture start(Level threshold) {
    LogCapture capture = new LogCapture(threshold);
    capture.appender.setContext(capture.root.getLoggerContext());
    capture.appender.setName("handoff-log-capture");
    capture.appender.start();
    capture.root.addAppender(capture.appender);
    return capture;
  }

  /** The WARN and ERROR lines so far, as {@code LEVEL logger [thread] message (exception: message)}. */
  public List<String> warnings() {
    synchronized (lines) {
      return lines.stream().filter(l -> l.startsWith("WARN ") || l.startsWith("ERROR ")).toList();
    }
  }

  /** Every line collected so far, in the form of {@link #warnings()}. */
  public List<String> lines() {
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  @Override
  public void close() {
    root.detachAppender(appender);
    appender.stop();
  }
}
