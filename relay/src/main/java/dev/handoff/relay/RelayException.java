package dev.handoff.relay;

import dev.handoff.core.HandoffException;
import java.sql.SQLException;

/** A relay operation failed on the database; a running relay retries by itself, {@code relayOnce()} throws this. */
public final class RelayException extends HandoffException {

  private static final long serialVersionUID = 1L;

  public RelayException(String message, SQLException cause) {
    super(message + ": " + cause.getMessage(), cause);
  }
}
