package dev.handoff.testing;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.testing.tools.Sql;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * What one integration test class works with: a connection pool to the shared PostgreSQL, a schema of its own
 * (migrated unless the class says otherwise), a Redis key prefix of its own, and private Redis servers for fault
 * tests. Closing it drops the schema, deletes the class's Redis keys and stops its private servers.
 */
public final class TestEnvironment implements AutoCloseable {

  private final String schema;
  private final String keyPrefix;
  private final TestServers.Postgres postgres;
  private final HikariDataSource dataSource;
  private final URI redisUri;
  private final Map<RedisClient, URI> serversOfClients = new IdentityHashMap<>();
  private final RedisClient redis;
  private final List<AutoCloseable> resources = new ArrayList<>();

  private TestEnvironment(String schema, String keyPrefix) {
    this.schema = schema;
    this.keyPrefix = keyPrefix;
    this.postgres = TestServers.postgres();
    this.dataSource = TestServers.newDataSource(schema, 24);
    this.redisUri = TestServers.redis();
    this.redis = redisClient(redisUri);
  }

  static TestEnvironment create(Class<?> testClass, boolean migrate) {
    String suffix = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0xFFFFFF));
    String base = testClass.getSimpleName().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
    if (base.length() > 36) {
      base = base.substring(0, 36);
    }
    String schema = "t_" + base + "_" + suffix;
    TestEnvironment env = new TestEnvironment(schema, "t" + suffix);
    if (migrate) {
      HandoffMigrations.migrate(env.dataSource, schema);
    }
    return env;
  }

  /** The schema of this test class: create tables here, pass it to handoff's builders. */
  public String schema() {
    return schema;
  }

  /** The Redis key prefix of this test class: pass it to handoff's builders. */
  public String keyPrefix() {
    return keyPrefix;
  }

  /** A pool of up to 24 connections whose search_path is this class's schema. */
  public DataSource dataSource() {
    return dataSource;
  }

  public TestServers.Postgres postgres() {
    return postgres;
  }

  /** A client of the shared Redis server (RESP2). */
  public RedisClient redis() {
    return redis;
  }

  /** How handoff's builders reach the shared Redis server. */
  public RedisConnectionSpec redisSpec() {
    return RedisConnectionSpec.of(redisUri);
  }

  public URI redisUri() {
    return redisUri;
  }

  /** A new client of the given server, closed with this environment. */
  public RedisClient newRedisClient(URI uri) {
    RedisClient client = redisClient(uri);
    resources.add(client);
    serversOfClients.put(client, uri);
    return client;
  }

  /**
   * How handoff's builders reach the server of {@code client}, one of this environment's ({@link #redis()} or a
   * {@link #newRedisClient} client): for a test that checks a server with its own client and hands the relay or a
   * consumer the same server.
   */
  public RedisConnectionSpec specOf(RedisClient client) {
    URI uri = client == redis ? redisUri : serversOfClients.get(client);
    if (uri == null) {
      throw new IllegalArgumentException("not a client of this environment: " + client);
    }
    return RedisConnectionSpec.of(uri);
  }

  /** A new pool to the shared PostgreSQL server, closed with this environment. */
  public HikariDataSource newDataSource(int maxConnections) {
    HikariDataSource pool = TestServers.newDataSource(schema, maxConnections);
    resources.add(pool);
    return pool;
  }

  /**
   * A new database of this test's own on the shared server, holding nothing but PostgreSQL's {@code public} schema:
   * for code that uses handoff's default schema ({@code handoff}) or a schema name of its own, as a deployment
   * does, without meeting another test class. Returns a pool of up to 8 connections to it; the pool is closed and
   * the database dropped with this environment.
   */
  public DataSource newDatabase() {
    String name = schema + "_db" + (resources.size() + 1);
    execute("CREATE DATABASE " + name);
    HikariDataSource pool = TestServers.newDataSource(TestServers.jdbcUrlOf(name), null, 8);
    resources.add(() -> {
      pool.close();
      execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    });
    return pool;
  }

  /**
   * A new login role without any privilege, with a random name; dropped with this environment (before its schema).
   * Grant it what the test needs with {@link DatabaseRole#grant} and connect as it with
   * {@link DatabaseRole#newDataSource}.
   */
  public DatabaseRole newRole() {
    DatabaseRole role = new DatabaseRole(this);
    resources.add(role);
    return role;
  }

  /** A Redis server of this test's own, which the test may stop and restart; stopped with this environment. */
  public RestartableRedis privateRedis() {
    RestartableRedis server = RestartableRedis.start();
    resources.add(server);
    return server;
  }

  /** Runs a query that returns one number, such as a count, with the given parameters. */
  public long queryLong(String sql, Object... params) {
    return new Sql(dataSource, "test").queryLong(sql, params);
  }

  /** Runs a query and returns its first column, each value as {@code type}. */
  public <T> List<T> queryList(String sql, Class<T> type, Object... params) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      List<T> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getObject(1, type));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Runs statements in autocommit mode. */
  public void execute(String... statements) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(String.join("; ", statements), e);
    }
  }

  @Override
  public void close() {
    for (AutoCloseable resource : resources) {
      try {
        resource.close();
      } catch (Exception e) {
        // keep closing the others
      }
    }
    try {
      execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } finally {
      deleteKeys(redis, keyPrefix);
      redis.close();
      dataSource.close();
    }
  }

  private static void deleteKeys(RedisClient client, String prefix) {
    String cursor = ScanParams.SCAN_POINTER_START;
    ScanParams params = new ScanParams().match(prefix + "*").count(500);
    do {
      ScanResult<String> page = client.scan(cursor, params);
      if (!page.getResult().isEmpty()) {
        client.del(page.getResult().toArray(String[]::new));
      }
      cursor = page.getCursor();
    } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
  }

  private static RedisClient redisClient(URI uri) {
    return TestServers.redisClient(uri, Duration.ofSeconds(5));
  }
}
