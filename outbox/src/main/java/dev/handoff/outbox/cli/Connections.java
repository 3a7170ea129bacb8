package dev.handoff.outbox.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.regex.Pattern;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Opens the database pool and the Redis client of a command-line tool from URLs, failing fast with one readable
 * line, and masks passwords wherever a URL is shown.
 */
public final class Connections {

  private static final Pattern JDBC_PASSWORD = Pattern.compile("(?i)(password=)[^&;]*");
  private static final Pattern URI_PASSWORD = Pattern.compile("(//[^:/@]*:)[^@/]*@");

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
    return URI_PASSWORD.matcher(JDBC_PASSWORD.matcher(url).replaceAll("$1***")).replaceAll("$1***@");
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

  /** Opens a Redis client (RESP2, 2 s timeouts) and checks the server answers. */
  public static RedisClient redis(String redisUrl, int maxConnections) {
    URI uri;
    try {
      uri = new URI(redisUrl);
    } catch (URISyntaxException | NullPointerException e) {
      throw new UnreachableException("the Redis URL is not a URL: '" + mask(redisUrl) + "'");
    }
    if (!"redis".equals(uri.getScheme()) || uri.getHost() == null) {
      throw new UnreachableException("the Redis URL must look like redis://[user:password@]host[:port][/db], was '"
          + mask(redisUrl) + "'");
    }
    DefaultJedisClientConfig.Builder client = DefaultJedisClientConfig.builder()
        .resp2()
        .timeoutMillis(2_000)
        .clientName("handoff");
    if (uri.getRawUserInfo() != null) {
      String[] parts = uri.getRawUserInfo().split(":", 2);
      if (parts.length == 2) {
        if (!parts[0].isEmpty()) {
          client.user(decode(parts[0]));
        }
        client.password(decode(parts[1]));
      } else {
        client.password(decode(parts[0]));
      }
    }
    String path = uri.getPath();
    if (path != null && path.length() > 1) {
      try {
        client.database(Integer.parseInt(path.substring(1)));
      } catch (NumberFormatException e) {
        throw new UnreachableException("the Redis URL's database must be a number, was '" + path.substring(1) + "'");
      }
    }
    redis.clients.jedis.ConnectionPoolConfig pool = new redis.clients.jedis.ConnectionPoolConfig();
    pool.setMaxTotal(maxConnections);
    pool.setMaxWait(java.time.Duration.ofSeconds(5));
    RedisClient redis = RedisClient.builder()
        .hostAndPort(new HostAndPort(uri.getHost(), uri.getPort() > 0 ? uri.getPort() : 6379))
        .clientConfig(client.build())
        .poolConfig(pool)
        .build();
    try {
      redis.ping();
    } catch (JedisException e) {
      redis.close();
      throw new UnreachableException("cannot connect to Redis at " + mask(redisUrl) + ": " + firstLine(e.getMessage()));
    }
    return redis;
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "no details";
    }
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }
}
