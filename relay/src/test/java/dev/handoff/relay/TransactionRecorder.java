package dev.handoff.relay;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source that records the transactions run through it as PostgreSQL sees them: a statement executed in
 * auto-commit is a transaction of its own; statements run with auto-commit off belong to the transaction that the
 * next {@code commit()} ends. Rolled-back transactions are not recorded. Thread-safe.
 */
final class TransactionRecorder implements DataSource {

  private final DataSource delegate;
  private final List<List<String>> committed = new ArrayList<>();

  TransactionRecorder(DataSource delegate) {
    this.delegate = delegate;
  }

  /** The committed transactions so far, each as the SQL of its statements in order. */
  synchronized List<List<String>> committed() {
    return List.copyOf(committed);
  }

  private synchronized void record(List<String> statements) {
    committed.add(List.copyOf(statements));
  }

  @Override
  public Connection getConnection() throws SQLException {
    return recording(delegate.getConnection());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return recording(delegate.getConnection(username, password));
  }

  private Connection recording(Connection c) {
    List<String> open = new ArrayList<>();
    return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          String name = method.getName();
          if (name.equals("commit")) {
            record(open);
            open.clear();
          } else if (name.equals("rollback") && method.getParameterCount() == 0) {
            open.clear();
          }
          Object result = invoke(c, method, args);
          if (name.equals("prepareStatement") && args != null && args[0] instanceof String sql) {
            return recording((PreparedStatement) result, c, sql, open);
          }
          return result;
        });
  }

  private PreparedStatement recording(PreparedStatement ps, Connection c, String sql, List<String> open) {
    return (PreparedStatement) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {PreparedStatement.class}, (proxy, method, args) -> {
          if (method.getName().startsWith("execute") && (args == null || args.length == 0)) {
            if (c.getAutoCommit()) {
              Object result = invoke(ps, method, args);
              record(List.of(sql));
              return result;
            }
            open.add(sql);
          }
          return invoke(ps, method, args);
        });
  }

  private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
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
  public <T> T unwrap(Class<T> type) throws SQLException {
    return delegate.unwrap(type);
  }

  @Override
  public boolean isWrapperFor(Class<?> type) throws SQLException {
    return delegate.isWrapperFor(type);
  }
}
