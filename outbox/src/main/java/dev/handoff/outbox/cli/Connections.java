package dev.handoff.outbox.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.outbox.RedisConnectionSpec;
import dev.handoff.outbox.RedisUrl;
import dev.handoff.outbox.internal.RedisFailures;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.Function;
import java.util.regex.Pattern;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Opens the database pool and the Redis client of a command-line tool from URLs, failing fast with one readable
 * line, and masks passwords wherever a URL is shown.
 */
public final class Connections {

  private static final Pattern JDBC_PASSWORD = Pattern.compile("(?i)(password=)[^&;]*");
  private static final Pattern URI_PASSWORD = Pattern.compile("(//[^:/@]*:)[^@/]*@");
  /** A password may hold an unescaped '@' (the login ends at the last one), so its rest is masked too. */
  private static final Pattern URI_PASSWORD_REST = Pattern.compile("(//[^:/@\\s]*:)[^/\\s]*@");
  /** A Redis URL's login without a colon is a password alone (see {@link RedisUrl}), so all of it is masked. */
  private static final Pattern REDIS_LONE_PASSWORD = Pattern.compile("(?i)(rediss?://)[^:/\\s]+@");

  private Connections() {}

  /** A problem with a URL or a server that the user can fix; its message is one line without secrets. */
  public static final class UnreachableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UnreachableException(String message) {
      super(message);
    }
  }

  /** {@code url} with any password replaced by {@code ***}. */
  public static String mask(String url) {
    if (url == null) {
      return null;
    }
    String masked = URI_PASSWORD.matcher(JDBC_PASSWORD.matcher(url).replaceAll("$1***")).replaceAll("$1***@");
    masked = URI_PASSWORD_REST.matcher(masked).replaceAll("$1***@");
    return REDIS_LONE_PASSWORD.matcher(masked).replaceAll("$1***@");
  }

  /** Opens a pool and checks it can connect. User and password may be URL parameters. */
  public static HikariDataSource database(String jdbcUrl, int maxConnections, String poolName) {
    if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new UnreachableException("the JDBC URL must start with jdbc:postgresql:, was '" + mask(jdbcUrl) + "'");
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(maxConnections);
    config.setMinimumIdle(1);
    config.setPoolName(poolName);
    config.setConnectionTimeout(5_000);
    config.setInitializationFailTimeout(-1);
    HikariDataSource pool = new HikariDataSource(config);
    try (Connection c = pool.getConnection()) {
      c.isValid(5);
    } catch (SQLException e) {
      pool.close();
      throw new UnreachableException("cannot connect to PostgreSQL at " + mask(jdbcUrl) + ": "
          + firstLine(e.getCause() != null ? e.getCause().getMessage() : e.getMessage()));
    }
    return pool;
  }

  /**
   * Opens a Redis client (RESP2, 2 s timeouts) and checks the server answers. The URL is read by
   * {@link RedisUrl#parse(String)}: user, password, database and {@code rediss://} for TLS.
   */
  public static RedisClient redis(String redisUrl, int maxConnections) {
    return redis(redisSpec(redisUrl, RedisConnectionSpec::builder), maxConnections, mask(redisUrl));
  }

  /**
   * The spec {@code configure} makes of {@code redisUrl}, or a one-line error (the password masked) if the URL or
   * a TLS setting is wrong.
   */
  public static RedisConnectionSpec redisSpec(String redisUrl,
      Function<RedisUrl, RedisConnectionSpec.Builder> configure) {
    if (redisUrl == null) {
      throw new UnreachableException("the Redis URL is not a URL: 'null'");
    }
    try {
      return configure.apply(RedisUrl.parse(redisUrl)).build();
    } catch (IllegalArgumentException e) {
      // One line, and the password is masked already.
      throw new UnreachableException(e.getMessage());
    }
  }

  /**
   * Opens a Redis client (RESP2, the spec's timeouts and TLS) and checks the server answers; a failure is one line
   * that names its cause (an untrusted certificate, a host the certificate does not name, TLS on one side only).
   */
  public static RedisClient redis(RedisConnectionSpec spec, int maxConnections) {
    return redis(spec, maxConnections, spec.url().toString());
  }

  private static RedisClient redis(RedisConnectionSpec spec, int maxConnections, String shownUrl) {
    JedisClientConfig client = DefaultJedisClientConfig.builder()
        .from(spec.clientConfig())
        .resp2()
        .clientName("handoff")
        .build();
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(maxConnections);
    pool.setMaxWait(Duration.ofSeconds(5));
    RedisClient redis = RedisClient.builder()
        .hostAndPort(spec.hostAndPort())
        .clientConfig(client)
        .poolConfig(pool)
        .build();
    try {
      redis.ping();
    } catch (JedisException e) {
      redis.close();
      throw new UnreachableException("cannot connect to Redis at " + shownUrl + ": "
          + mask(RedisFailures.describe(spec, e)));
    }
    return redis;
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "no details";
    }
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }
}
