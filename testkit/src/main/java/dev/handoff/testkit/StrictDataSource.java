package dev.handoff.testkit;

import dev.handoff.consumer.HandlerScope;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The application's data source in strict mode ({@link ConsumerTestKit#strict}): it lends connections as before,
 * except to code running inside a handoff handler on the same thread, which it refuses and records for the kit's
 * waits and replay assertions to report. Thread-safe: the record is a concurrent map of each group's first refusal.
 */
final class StrictDataSource implements DataSource {

  private static final Map<String, String> FIRST_REFUSAL = new ConcurrentHashMap<>();

  private final DataSource delegate;

  StrictDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  /** Throws the first refusal recorded for {@code group}, once: a later check passes unless another is recorded. */
  static void failIfRefused(String group) {
    String refusal = FIRST_REFUSAL.remove(group);
    if (refusal != null) {
      throw new AssertionError(refusal);
    }
  }

  @Override
  public Connection getConnection() throws SQLException {
    refuseInsideAHandler();
    return delegate.getConnection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    refuseInsideAHandler();
    return delegate.getConnection(username, password);
  }

  private static void refuseInsideAHandler() throws SQLException {
    HandlerScope.Call call = HandlerScope.current().orElse(null);
    if (call == null) {
      return;
    }
    String refusal = "consumer group '" + call.group() + "': in strict mode, the handler of " + call.running()
        + " asked the application's DataSource for a connection; what it writes there commits on its own, apart"
        + " from the inbox marker, and again on every redelivery: write through the Connection the handler was given,"
        + " or, under the Spring Boot starter, through Spring (JdbcTemplate, JPA) with the default propagation";
    FIRST_REFUSAL.putIfAbsent(call.group(), refusal);
    throw new SQLException(refusal);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return delegate.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    delegate.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    delegate.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return delegate.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return delegate.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || delegate.isWrapperFor(iface);
  }
}
