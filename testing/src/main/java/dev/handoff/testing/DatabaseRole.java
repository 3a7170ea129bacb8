package dev.handoff.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.migrations.HandoffGrants;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A login role of one test, with a random name, that holds only the grants the test gives it: connect as it with
 * {@link #newDataSource}. Closing it (or the {@link TestEnvironment} that made it) closes its pools, revokes what it
 * was granted and drops it: roles belong to the server, not to the test's schema.
 */
public final class DatabaseRole implements AutoCloseable {

  private final TestEnvironment env;
  private final String name;
  private final String password;
  private final List<HikariDataSource> pools = new ArrayList<>();

  DatabaseRole(TestEnvironment env) {
    this.env = env;
    this.name = "t_role_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000000, 0x7FFFFFFF));
    this.password = UUID.randomUUID().toString();
    env.execute("CREATE ROLE " + name + " LOGIN PASSWORD '" + password + "'");
  }

  /** The role's name (lower case, so the same quoted or not). */
  public String name() {
    return name;
  }

  /** Applies handoff's grants of {@code role} on the test's schema, through {@link HandoffGrants#apply}. */
  public DatabaseRole grant(HandoffGrants.Role role) {
    try {
      HandoffGrants.apply(env.dataSource(), role, env.schema(), name);
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
    return this;
  }

  /** Runs {@code statements} as the test's superuser, with {@code ROLE} replaced by this role's name. */
  public DatabaseRole execute(String... statements) {
    String[] named = new String[statements.length];
    for (int i = 0; i < statements.length; i++) {
      named[i] = statements[i].replace("ROLE", name);
    }
    env.execute(named);
    return this;
  }

  /**
   * What this role holds on the test's schema and its tables, sorted: {@code schema:USAGE},
   * {@code table:PRIVILEGE} for a table-wide grant, {@code table.column:PRIVILEGE} for a column grant.
   */
  public List<String> privileges() {
    String schema = env.schema();
    return env.queryList("SELECT p FROM ("
        + " SELECT 'schema:' || a.privilege_type AS p FROM pg_namespace n, aclexplode(n.nspacl) a"
        + " WHERE n.nspname = ? AND a.grantee = ?::regrole"
        + " UNION ALL SELECT c.relname || ':' || a.privilege_type FROM pg_class c, aclexplode(c.relacl) a"
        + " WHERE c.relnamespace = ?::regnamespace AND a.grantee = ?::regrole"
        + " UNION ALL SELECT c.relname || '.' || t.attname || ':' || a.privilege_type FROM pg_attribute t"
        + " JOIN pg_class c ON c.oid = t.attrelid, aclexplode(t.attacl) a"
        + " WHERE c.relnamespace = ?::regnamespace AND a.grantee = ?::regrole) g ORDER BY p COLLATE \"C\"",
        String.class, schema, name, schema, name, schema, name);
  }

  /** A new pool that logs in as this role, search_path the test's schema; closed with the role. */
  public HikariDataSource newDataSource(int maxConnections) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(serverUrl());
    config.setUsername(name);
    config.setPassword(password);
    config.setMaximumPoolSize(maxConnections);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    config.setPoolName("role-" + name);
    config.setSchema(env.schema());
    HikariDataSource pool = new HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  /** The shared server's JDBC URL with this role's user and password as parameters, for a command line. */
  public String jdbcUrl() {
    String url = serverUrl();
    return url + (url.contains("?") ? "&" : "?") + "user=" + name + "&password=" + password;
  }

  /** The shared server's URL without its own user and password parameters, which would win over a pool's. */
  private String serverUrl() {
    return env.postgres().jdbcUrl().replaceAll("(?i)([?&])(user|password)=[^&]*", "$1")
        .replaceAll("[?&]+$", "").replaceAll("\\?&+", "?").replaceAll("&&+", "&");
  }

  @Override
  public void close() {
    for (HikariDataSource pool : pools) {
      pool.close();
    }
    pools.clear();
    env.execute("DROP OWNED BY " + name, "DROP ROLE IF EXISTS " + name);
  }
}
