package dev.handoff.outbox;

import dev.handoff.core.HandoffException;
import java.sql.SQLException;

/**
 * The database refused an append. The cause is the driver's {@link SQLException}; the caller's transaction is
 * typically aborted by then and must be rolled back.
 */
public final class OutboxWriteException extends HandoffException {

  private static final long serialVersionUID = 1L;

  public OutboxWriteException(String message, SQLException cause) {
    super(message + ": " + cause.getMessage(), cause);
  }

  /** The SQLSTATE of the failure, for example {@code 40001} for a serialization failure worth retrying. */
  public String sqlState() {
    return ((SQLException) getCause()).getSQLState();
  }
}
