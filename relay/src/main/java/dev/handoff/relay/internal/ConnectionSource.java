package dev.handoff.relay.internal;

import java.sql.Connection;
import java.sql.SQLException;

/** Opens a connection in auto-commit, from the relay's pool. */
@FunctionalInterface
interface ConnectionSource {
  Connection get() throws SQLException;
}
