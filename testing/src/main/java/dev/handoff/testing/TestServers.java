package dev.handoff.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;

/**
 * The PostgreSQL and Redis servers that every test of the JVM shares, resolved once, in this order:
 *
 * <ol>
 *   <li>the environment: {@code HANDOFF_TEST_JDBC_URL} (user and password as URL parameters) and
 *       {@code HANDOFF_TEST_REDIS_URL} ({@code redis://host:port});
 *   <li>Testcontainers, when a Docker engine is plausibly there (a cheap check of {@code DOCKER_HOST} and the
 *       usual sockets comes first, so machines without Docker pay nothing);
 *   <li>embedded servers from Maven Central: zonky's PostgreSQL and org.signal's Redis 7.0.15.
 * </ol>
 *
 * <p>Servers are stopped by a shutdown hook. Tests never flush or drop anything they did not create: each test
 * class works in its own schema and Redis key prefix (see {@link HandoffTestExtension}).
 */
public final class TestServers {

  private static final Logger log = LoggerFactory.getLogger(TestServers.class);
  private static final String POSTGRES_IMAGE = "postgres:17-alpine";
  private static final String REDIS_IMAGE = "redis:7.0.15";

  private static Postgres postgres;
  private static URI redis;

  private TestServers() {}

  /** Connection facts of the shared PostgreSQL server. */
  public record Postgres(String jdbcUrl, String user, String password) {}

  public static synchronized Postgres postgres() {
    if (postgres == null) {
      postgres = resolvePostgres();
    }
    return postgres;
  }

  public static synchronized URI redis() {
    if (redis == null) {
      redis = resolveRedis();
    }
    return redis;
  }

  /**
   * A new pool of up to {@code maxConnections} to the shared PostgreSQL server, whose search_path is {@code schema}
   * (the server's default when null). The caller closes it; a {@link HandoffTest} has {@link TestEnvironment}'s.
   */
  public static HikariDataSource newDataSource(String schema, int maxConnections) {
    return newDataSource(postgres().jdbcUrl(), schema, maxConnections);
  }

  /** The JDBC URL of database {@code database} on the shared PostgreSQL server. */
  static String jdbcUrlOf(String database) {
    return postgres().jdbcUrl().replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + database);
  }

  /** A new pool to {@code jdbcUrl} on the shared server, as its user, as {@link #newDataSource(String, int)}. */
  static HikariDataSource newDataSource(String jdbcUrl, String schema, int maxConnections) {
    Postgres pg = postgres();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    if (pg.user() != null) {
      config.setUsername(pg.user());
    }
    if (pg.password() != null) {
      config.setPassword(pg.password());
    }
    config.setMaximumPoolSize(maxConnections);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    if (schema != null) {
      config.setPoolName("test-" + schema);
      config.setSchema(schema);
    }
    return new HikariDataSource(config);
  }

  /** A new client (RESP2) of the shared Redis server with that socket timeout. The caller closes it. */
  public static RedisClient newRedisClient(Duration timeout) {
    return redisClient(redis(), timeout);
  }

  /** A new client (RESP2) of the Redis server at {@code uri} with that socket timeout. */
  static RedisClient redisClient(URI uri, Duration timeout) {
    return RedisClient.builder()
        .hostAndPort(new HostAndPort(uri.getHost(), uri.getPort()))
        .clientConfig(DefaultJedisClientConfig.builder().resp2().timeoutMillis((int) timeout.toMillis()).build())
        .build();
  }

  private static Postgres resolvePostgres() {
    String url = System.getenv("HANDOFF_TEST_JDBC_URL");
    if (url != null && !url.isBlank()) {
      log.info("PostgreSQL from HANDOFF_TEST_JDBC_URL");
      return new Postgres(url, null, null);
    }
    if (dockerAvailable()) {
      PostgreSQLContainer container =
          new PostgreSQLContainer(POSTGRES_IMAGE).withCommand("postgres", "-c", "max_connections=300");
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "handoff-test-postgres-stop"));
      log.info("PostgreSQL from Testcontainers ({})", POSTGRES_IMAGE);
      return new Postgres(container.getJdbcUrl(), container.getUsername(), container.getPassword());
    }
    try {
      EmbeddedPostgres pg =
          EmbeddedPostgres.builder()
              // zonky gives a server 10 s to take connections; three forks starting theirs at once on two busy
              // cores took longer (a newcomer run's first test class failed so), so the wait is a minute.
              .setPGStartupWait(Duration.ofSeconds(60))
              .setPort(FreePorts.take())
              .setServerConfig("max_connections", "300")
              .setServerConfig("fsync", "off")
              .setServerConfig("synchronous_commit", "off")
              .setServerConfig("full_page_writes", "off")
              .setServerConfig("track_commit_timestamp", "on") // BenchTest reads where rows waited between commits
              .start();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(pg), "handoff-test-postgres-stop"));
      log.info("PostgreSQL embedded (zonky) on port {}", pg.getPort());
      return new Postgres(pg.getJdbcUrl("postgres", "postgres"), "postgres", null);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start embedded PostgreSQL", e);
    }
  }

  private static URI resolveRedis() {
    String url = System.getenv("HANDOFF_TEST_REDIS_URL");
    if (url != null && !url.isBlank()) {
      log.info("Redis from HANDOFF_TEST_REDIS_URL");
      return URI.create(url);
    }
    if (dockerAvailable()) {
      GenericContainer<?> container = new GenericContainer<>(REDIS_IMAGE).withExposedPorts(6379);
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "handoff-test-redis-stop"));
      log.info("Redis from Testcontainers ({})", REDIS_IMAGE);
      return URI.create("redis://" + container.getHost() + ":" + container.getMappedPort(6379));
    }
    RestartableRedis server = RestartableRedis.start();
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "handoff-test-redis-stop"));
    log.info("Redis embedded (7.0.15) on port {}", server.port());
    return server.uri();
  }

  private static boolean dockerAvailable() {
    boolean plausible =
        System.getenv("DOCKER_HOST") != null
            || Files.exists(Path.of("/var/run/docker.sock"))
            || Files.exists(Path.of(System.getProperty("user.home"), ".docker", "run", "docker.sock"));
    return plausible && DockerClientFactory.instance().isDockerAvailable();
  }

  private static void closeQuietly(EmbeddedPostgres pg) {
    try {
      pg.close();
    } catch (IOException e) {
      // the JVM is exiting; nothing useful to do
    }
  }
}
