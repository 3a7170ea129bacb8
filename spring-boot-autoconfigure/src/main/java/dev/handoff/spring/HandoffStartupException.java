package dev.handoff.spring;

import dev.handoff.core.HandoffException;

/**
 * handoff cannot start in this application: a class path that lacks what it needs, a schema that is not migrated or
 * not granted, a listener that names an undeclared topic. The message is one line that names the setting, grant or
 * property to change; Spring Boot prints it as the reason the application failed to start.
 */
public final class HandoffStartupException extends HandoffException {

  private static final long serialVersionUID = 1L;

  /** One line saying what to change. */
  public HandoffStartupException(String message) {
    super(message);
  }

  /** One line saying what to change, with what was found. */
  public HandoffStartupException(String message, Throwable cause) {
    super(message, cause);
  }
}
