package dev.handoff.benchmarks.ledger;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source that counts the transactions its users cause, the way PostgreSQL's {@code pg_stat_database} counts
 * them, so that a component's commits are exact rather than derived from the server's counters (which each backend
 * flushes at most once a second).
 *
 * <p>Rules, per connection: a statement executed in auto-commit is one committed transaction (a failing one a
 * rolled-back one); with auto-commit off, the first statement (or savepoint) opens a transaction, and
 * {@code commit()}, {@code setAutoCommit(true)} or {@code rollback()} ends it. A {@code commit()} with nothing
 * executed is not counted: pgjdbc sends nothing then, since it sends {@code BEGIN} only with the first statement. A
 * transaction that had a failing statement ends as a rollback whatever ends it, as the server does. One left open at
 * {@code close()} is counted as rolled back, since the pool (HikariCP) rolls it back.
 *
 * <p>Not counted: what runs below the wrapper, that is the pool's own validation of idle connections
 * ({@code isValid}, an empty query PostgreSQL counts as a transaction) and the driver's internal queries. Anything a
 * user does on an unwrapped driver object ({@code unwrap(PGConnection.class)}) is not seen either; handoff's relay
 * only reads notifications and sets the prepare threshold through it, neither of which sends a statement.
 */
final class CountingDataSource implements DataSource {

  private static final Set<String> EXECUTES = Set.of("execute", "executeQuery", "executeUpdate",
      "executeLargeUpdate", "executeBatch", "executeLargeBatch");

  private final DataSource delegate;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong rollbacks = new AtomicLong();

  CountingDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  /** Transactions committed through this data source so far. */
  long commits() {
    return commits.get();
  }

  /** Transactions rolled back (explicitly, by a failing statement, or left open at close) so far. */
  long rollbacks() {
    return rollbacks.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    return counted(delegate.getConnection());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return counted(delegate.getConnection(username, password));
  }

  private Connection counted(Connection c) throws SQLException {
    return (Connection) Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(),
        new Class<?>[] {Connection.class}, new ConnectionCounter(c));
  }

  /** One connection's transaction state, as the server sees it. */
  private final class ConnectionCounter implements InvocationHandler {

    private final Connection target;
    private boolean autoCommit;
    private boolean open;
    private boolean failed;
    private Connection self;

    ConnectionCounter(Connection target) throws SQLException {
      this.target = target;
      this.autoCommit = target.getAutoCommit(); // the pool's cached flag: no round trip
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      self = (Connection) proxy;
      String name = method.getName();
      boolean noArgs = method.getParameterCount() == 0;
      if (name.equals("unwrap") || name.equals("isWrapperFor")) {
        return wrapperCall(proxy, method, (Class<?>) args[0]);
      }
      Object result;
      try {
        result = method.invoke(target, args);
      } catch (InvocationTargetException e) {
        if (name.equals("commit") || name.equals("rollback") && noArgs) {
          endTransaction(false); // the server ended it either way, or the connection is gone
        }
        throw e.getCause();
      }
      switch (name) {
        case "commit" -> endTransaction(!failed);
        case "rollback" -> {
          if (noArgs) {
            endTransaction(false);
          } // rollback(Savepoint) leaves the transaction open
        }
        case "setAutoCommit" -> {
          boolean on = (Boolean) args[0];
          if (on && !autoCommit) {
            endTransaction(!failed); // JDBC: switching auto-commit on commits the open transaction
          }
          autoCommit = on;
        }
        case "setSavepoint" -> open = true;
        case "close" -> {
          if (open) {
            endTransaction(false);
          }
        }
        case "createStatement", "prepareStatement", "prepareCall" -> {
          return statement((Statement) result, method.getReturnType());
        }
        default -> { }
      }
      return result;
    }

    private Object wrapperCall(Object proxy, Method method, Class<?> iface) throws Throwable {
      if (iface.isInstance(proxy)) {
        return method.getName().equals("unwrap") ? proxy : Boolean.TRUE;
      }
      try {
        return method.invoke(target, iface);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }

    private void endTransaction(boolean committed) {
      if (open) {
        (committed ? commits : rollbacks).incrementAndGet();
      }
      open = false;
      failed = false;
    }

    private void executed(boolean succeeded) {
      if (autoCommit) {
        (succeeded ? commits : rollbacks).incrementAndGet();
      } else {
        open = true;
        failed |= !succeeded;
      }
    }

    private Object statement(Statement s, Class<?> type) {
      Class<?> iface = type == CallableStatement.class ? CallableStatement.class
          : type == PreparedStatement.class ? PreparedStatement.class : Statement.class;
      return Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(), new Class<?>[] {iface},
          (proxy, method, args) -> {
            String name = method.getName();
            if (name.equals("getConnection")) {
              return self; // so that work done through the statement's connection is counted too
            }
            if (name.equals("unwrap") || name.equals("isWrapperFor")) {
              if (((Class<?>) args[0]).isInstance(proxy)) {
                return name.equals("unwrap") ? proxy : Boolean.TRUE;
              }
            }
            try {
              Object result = method.invoke(s, args);
              if (EXECUTES.contains(name)) {
                executed(true);
              }
              return result;
            } catch (InvocationTargetException e) {
              if (EXECUTES.contains(name)) {
                executed(false);
              }
              throw e.getCause();
            }
          });
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
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || delegate.isWrapperFor(iface);
  }
}
