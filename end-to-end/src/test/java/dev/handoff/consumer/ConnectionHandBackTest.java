package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * A consumer hands its connections back as it borrowed them. With a DataSource that does not reset connections
 * (anything but a pool like HikariCP), a connection left with auto-commit off makes the application's next
 * statement on it wait for a commit that never comes.
 */
@HandoffTest
class ConnectionHandBackTest {

  private final TestEnvironment env;

  ConnectionHandBackTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aPlainDataSourceGetsItsConnectionBackWithAutoCommitOnAfterBatchesAndRetries() throws Exception {
    Fixture f = new Fixture(env, "hand-back");
    f.publishMany(3);
    try (Connection physical = DriverManager.getConnection(env.postgres().jdbcUrl(), env.postgres().user(),
        env.postgres().password())) {
      physical.setSchema(env.schema());
      DataSource plain = new SingleConnectionDataSource(physical);
      try (StreamConsumer consumer = StreamConsumer.builder(plain, RedisConnectionSpec.of(f.redisUri)).schema(env.schema())
          .keyPrefix(env.keyPrefix()).topic(f.topic).group("g").handler(f.effect("g", null))
          .inboxRetention(InboxRetention.defaults().withAutomaticPurge(false)).build()) {
        assertThat(consumer.pollOnce().handled()).isEqualTo(3);
        assertThat(physical.getAutoCommit()).as("after a batch").isTrue();
        assertThatThrownBy(() -> consumer.retry(987_654_321L)).isInstanceOf(ConsumerException.class)
            .hasMessageContaining("no dead letter 987654321");
        assertThat(physical.getAutoCommit()).as("after a failed retry").isTrue();
      }
      // What the application does next on that connection is committed at once.
      try (Statement st = physical.createStatement()) {
        st.executeUpdate("INSERT INTO " + f.effects + " (consumer_group, message_id, tag)"
            + " VALUES ('app', gen_random_uuid(), 'after')");
      }
    }
    assertThat(env.queryLong("SELECT count(*) FROM " + f.effects + " WHERE consumer_group = 'app'")).isEqualTo(1);
    assertThat(f.effectCount("g")).isEqualTo(3);
  }

  /** One physical connection, lent out again and again; closing a loan does not close it and resets nothing. */
  private static final class SingleConnectionDataSource implements DataSource {

    private final Connection physical;

    SingleConnectionDataSource(Connection physical) {
      this.physical = physical;
    }

    @Override
    public Connection getConnection() {
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            switch (method.getName()) {
              case "close":
                return null;
              case "isClosed":
                return false;
              default:
                try {
                  return method.invoke(physical, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
            }
          });
    }

    @Override
    public Connection getConnection(String username, String password) {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
