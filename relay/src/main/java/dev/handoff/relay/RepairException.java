package dev.handoff.relay;

import dev.handoff.core.HandoffException;

/**
 * A {@link StreamRepair} could not run: the database failed (nothing of the failed shard was reset; shards repaired
 * before it stay repaired, and running the repair again is safe), or the topic is not one a repair applies to.
 */
public final class RepairException extends HandoffException {

  private static final long serialVersionUID = 1L;

  public RepairException(String message) {
    super(message);
  }

  public RepairException(String message, Throwable cause) {
    super(message, cause);
  }
}
