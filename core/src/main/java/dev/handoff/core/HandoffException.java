package dev.handoff.core;

/**
 * The root of every exception that handoff throws for a failure at run time (configuration mistakes are
 * {@link IllegalArgumentException}s and misuse is an {@link IllegalStateException}).
 *
 * <p>Subclasses carry the identifiers involved (topic, message ID, stream, group) in fields and in the message.
 */
public abstract class HandoffException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  protected HandoffException(String message) {
    super(message);
  }

  protected HandoffException(String message, Throwable cause) {
    super(message, cause);
  }
}
