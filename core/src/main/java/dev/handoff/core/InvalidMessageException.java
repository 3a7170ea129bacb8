package dev.handoff.core;


/**
 * A message was refused before anything was written because one of its fields is invalid. The message names the
 * field and, for size limits, the limit and the actual size.
 */
public final class InvalidMessageException extends HandoffException {

  private static final long serialVersionUID = 1L;

  private final String field;

  public InvalidMessageException(String field, String message) {
    super(message);
    this.field = field;
  }

  /** The name of the offending field: {@code topic}, {@code type}, {@code key}, {@code payload}, {@code headers}. */
  public String field() {
    return field;
  }
}
