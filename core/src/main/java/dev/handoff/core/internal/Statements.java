package dev.handoff.core.internal;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGStatement;

/**
 * How handoff runs SQL so that nothing outlives a transaction on the server: every statement, and the COMMIT and
 * ROLLBACK of the connections handoff borrows, is the driver's unnamed statement, parsed and planned at each
 * execution, never a named server-side prepared statement.
 *
 * <p>A named statement lives in one server session. Behind a pooler in transaction mode (PgBouncer before 1.21, or
 * 1.21+ without {@code max_prepared_statements}) the next transaction may run on another server connection, where
 * pgjdbc's {@code S_1} does not exist or is another client's: {@code prepared statement "S_1" already exists} or
 * {@code bind message supplies 0 parameters}. pgjdbc names a statement after its fifth execution on a connection
 * ({@code prepareThreshold=5}), at once for a batch of five or more, and names {@code COMMIT} and {@code ROLLBACK}
 * from their first use unless the connection's threshold is 0. With the unnamed statement every execution is also
 * planned with its actual arguments, so a plan made while the outbox was tiny is never reused once it has grown.
 * What it costs on a direct connection is measured in docs/performance.md. Connections of another driver are left
 * as they are.
 *
 * <p>The append's statement is the exception: it runs in the application's transaction, on the application's
 * connection, under that connection's {@code prepareThreshold} like the application's own statements. An
 * application behind transaction pooling sets the threshold to 0 for its own {@code COMMIT}, which makes the append
 * unnamed too; on a direct connection the append is then parsed and planned once per connection, not per row.
 */
public final class Statements {

  private Statements() {}

  /** {@code c.prepareStatement(sql)}, as the unnamed statement. */
  public static PreparedStatement prepare(Connection c, String sql) throws SQLException {
    return unnamed(c.prepareStatement(sql));
  }

  /** {@code c.createStatement()}, whose statements are unnamed too (pgjdbc caches plain statements as well). */
  public static Statement statement(Connection c) throws SQLException {
    return unnamed(c.createStatement());
  }

  /**
   * {@code dataSource}, whose connections run with pgjdbc's {@code prepareThreshold} at 0 while handoff holds them,
   * so that their COMMIT and ROLLBACK, and any statement a handler creates on them, are unnamed too. Closing such
   * a connection sets the threshold back to what it was before it goes back to the pool: the application's own
   * use of its pool is unchanged.
   */
  public static DataSource sessionFree(DataSource dataSource) {
    return dataSource instanceof SessionFree ? dataSource : new SessionFree(dataSource);
  }

  private static <S extends Statement> S unnamed(S statement) throws SQLException {
    if (statement.isWrapperFor(PGStatement.class)) {
      statement.unwrap(PGStatement.class).setPrepareThreshold(0);
    }
    return statement;
  }

  private static Connection sessionFree(Connection c) throws SQLException {
    if (!c.isWrapperFor(PGConnection.class)) {
      return c;
    }
    PGConnection pg = c.unwrap(PGConnection.class);
    int before = pg.getPrepareThreshold();
    if (before == 0) {
      return c;
    }
    pg.setPrepareThreshold(0);
    return (Connection) Proxy.newProxyInstance(Statements.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close") && method.getParameterCount() == 0) {
            pg.setPrepareThreshold(before); // a field of the driver's connection: set even if it is broken
          }
          try {
            return method.invoke(c, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** The wrapper {@link #sessionFree(DataSource)} returns. */
  private static final class SessionFree implements DataSource {

    private final DataSource delegate;

    SessionFree(DataSource delegate) {
      this.delegate = delegate;
    }

    @Override
    public Connection getConnection() throws SQLException {
      return sessionFree(delegate.getConnection());
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      return sessionFree(delegate.getConnection(username, password));
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
      return iface.isInstance(delegate) ? iface.cast(delegate) : delegate.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return iface.isInstance(delegate) || delegate.isWrapperFor(iface);
    }
  }
}
