package dev.handoff.core;

/**
 * A Redis stream entry could not be decoded as a handoff message: a field is missing or unreadable, or the entry
 * was written in a format version this code does not know. The message names the field.
 */
public final class MalformedEntryException extends HandoffException {

  private static final long serialVersionUID = 1L;

  private final String field;

  public MalformedEntryException(String field, String message) {
    super(message);
    this.field = field;
  }

  public MalformedEntryException(String field, String message, Throwable cause) {
    super(message, cause);
    this.field = field;
  }

  /** The stream field at fault. */
  public String field() {
    return field;
  }
}
