package dev.handoff.ledger;

/** A failure of the sample ledger that a user can act on; its message is one line without secrets. */
public class LedgerException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public LedgerException(String message) {
    super(message);
  }

  public LedgerException(String message, Throwable cause) {
    super(message, cause);
  }
}
