package dev.handoff.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.RedisUrl;
import dev.handoff.core.internal.RedisClients;
import dev.handoff.core.internal.RedisFailures;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Opens the database pool and the Redis client of a command-line tool from URLs, failing fast with one readable
 * line, and masks passwords wherever a URL is shown.
 */
public final class Connections {

  /**
   * A password parameter's value ends at '&', ';', white space, a ':' before white space, or the end: the reason that
   * follows it in a message stays.
   */
  private static final Pattern JDBC_PASSWORD = Pattern.compile("(?i)(password=)(?!\\*\\*\\*)(?:[^&;\\s:]|:(?!\\s|$))*");
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

  /**
   * The seeds of a {@code --redis-cluster} option (each {@code host:port}); empty for none.
   *
   * @throws UnreachableException with one line naming the option and the seed that is not {@code host:port}
   */
  public static List<HostAndPort> clusterSeeds(List<String> seeds) {
    List<HostAndPort> out = new ArrayList<>();
    if (seeds == null) {
      return out;
    }
    for (String seed : seeds) {
      String s = seed.strip();
      int colon = s.lastIndexOf(':');
      int port = -1;
      if (colon > 0) {
        try {
          port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
          port = -1;
        }
      }
      if (port < 1 || port > 65_535) {
        throw new UnreachableException("--redis-cluster needs host:port seeds, was '" + s + "'");
      }
      out.add(new HostAndPort(s.substring(0, colon), port));
    }
    return out;
  }

  /** The time a tool waits at startup for a server that refuses or does not answer, unless told otherwise. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(30);

  /** Opens a pool and checks it can connect, waiting up to {@link #DEFAULT_CONNECT_TIMEOUT}. */
  public static HikariDataSource database(String jdbcUrl, int maxConnections, String poolName) {
    return database(jdbcUrl, maxConnections, poolName, DEFAULT_CONNECT_TIMEOUT);
  }

  /**
   * Opens a pool and checks it can connect. User and password may be URL parameters. The pool's statements are
   * never named server-side prepared statements ({@code prepareThreshold=0}) unless the URL says otherwise, so the
   * tools work behind a pooler in transaction mode (PgBouncer before 1.21) as they do on a direct connection. A
   * server that refuses the connection or does not answer (SQLSTATE class 08, or 57P03 while it starts) is asked
   * again with backoff until {@code connectTimeout} has passed since it first refused; anything else (a wrong
   * password, a missing database) fails at once.
   */
  public static HikariDataSource database(String jdbcUrl, int maxConnections, String poolName,
      Duration connectTimeout) {
    if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new UnreachableException("the JDBC URL must start with jdbc:postgresql:, was '" + mask(jdbcUrl) + "'");
    }
    awaitPostgres(jdbcUrl, connectTimeout);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.addDataSourceProperty("prepareThreshold", "0"); // a prepareThreshold in the URL wins
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

  /** Opens a Redis client, waiting up to {@link #DEFAULT_CONNECT_TIMEOUT} for the server. */
  public static RedisClient redis(String redisUrl, int maxConnections) {
    return redis(redisUrl, maxConnections, DEFAULT_CONNECT_TIMEOUT);
  }

  /**
   * Opens a Redis client (RESP2, 2 s timeouts) and checks the server answers. The URL is read by
   * {@link RedisUrl#parse(String)}: user, password, database and {@code rediss://} for TLS. A refused or unanswered
   * connection is tried again with backoff until {@code connectTimeout} has passed since the first refusal; a refused
   * login fails at once.
   */
  public static RedisClient redis(String redisUrl, int maxConnections, Duration connectTimeout) {
    return redis(redisSpec(redisUrl, RedisConnectionSpec::builder), maxConnections, mask(redisUrl), connectTimeout);
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
    return redis(spec, maxConnections, DEFAULT_CONNECT_TIMEOUT);
  }

  /** As {@link #redis(RedisConnectionSpec, int)}, waiting up to {@code connectTimeout} for a refusing server. */
  public static RedisClient redis(RedisConnectionSpec spec, int maxConnections, Duration connectTimeout) {
    return redis(spec, maxConnections, spec.url().toString(), connectTimeout);
  }

  private static RedisClient redis(RedisConnectionSpec spec, int maxConnections, String shownUrl,
      Duration connectTimeout) {
    if (spec.isCluster()) {
      throw new UnreachableException("this command needs a single Redis server, not a cluster");
    }
    return (RedisClient) client(spec, maxConnections, shownUrl, connectTimeout);
  }

  /**
   * Opens a client of the spec's single server or, for a {@link RedisConnectionSpec#isCluster() cluster}, of the
   * cluster its seeds belong to (a pool of {@code maxConnections} per node), and checks it answers, waiting up to
   * {@code connectTimeout} as {@link #redis(RedisConnectionSpec, int, Duration)} does.
   */
  public static UnifiedJedis client(RedisConnectionSpec spec, int maxConnections, Duration connectTimeout) {
    return client(spec, maxConnections, spec.isCluster() ? "the Redis Cluster of " + spec.clusterNodes()
        : spec.url().toString(), connectTimeout);
  }

  private static UnifiedJedis client(RedisConnectionSpec spec, int maxConnections, String shownUrl,
      Duration connectTimeout) {
    long deadline = 0;
    for (int attempt = 0; ; attempt++) {
      UnifiedJedis redis = null;
      try {
        // A cluster client reads the slot map from a seed as it is built, so building is part of the attempt.
        redis = RedisClients.open(spec, maxConnections, Duration.ofSeconds(5), "handoff");
        redis.ping();
        return redis;
      } catch (JedisException e) {
        if (redis != null) {
          redis.close();
        }
        boolean notYet = notListeningYet(e);
        deadline = attempt == 0 ? waitEnds(connectTimeout) : deadline;
        if (!notYet || System.nanoTime() - deadline >= 0) {
          throw new UnreachableException("cannot connect to Redis at " + shownUrl
              + (notYet ? waited(connectTimeout) : "") + ": " + mask(RedisFailures.describe(spec, e)));
        }
        waitBeforeRetry(attempt, "Redis", shownUrl, connectTimeout, e.getMessage());
      }
    }
  }

  /**
   * A refused or unanswered connect: a server that is not up yet. A TLS failure or a refused login is not, and fails
   * at once rather than after the whole wait.
   */
  private static boolean notListeningYet(Throwable e) {
    // Jedis 8 reports a refused connect as "Failed to connect" with the ConnectException suppressed, not as cause.
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SSLException) {
        return false;
      }
      if (t instanceof ConnectException || (t instanceof SocketTimeoutException && t.getMessage() != null
          && t.getMessage().toLowerCase(Locale.ROOT).contains("connect"))) {
        return true;
      }
      for (Throwable s : t.getSuppressed()) {
        if (notListeningYet(s)) {
          return true;
        }
      }
    }
    return false;
  }

  /** Waits until PostgreSQL takes a connection, or throws once only a failure of another kind or time is left. */
  private static void awaitPostgres(String jdbcUrl, Duration connectTimeout) {
    long deadline = 0;
    for (int attempt = 0; ; attempt++) {
      try {
        DriverManager.getConnection(jdbcUrl).close();
        return;
      } catch (SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        boolean notYet = state.startsWith("08") || state.equals("57P03");
        deadline = attempt == 0 ? waitEnds(connectTimeout) : deadline;
        if (!notYet || System.nanoTime() - deadline >= 0) {
          throw new UnreachableException("cannot connect to PostgreSQL at " + mask(jdbcUrl)
              + (notYet ? waited(connectTimeout) : "") + ": " + firstLine(e.getMessage()));
        }
        waitBeforeRetry(attempt, "PostgreSQL", mask(jdbcUrl), connectTimeout, e.getMessage());
      }
    }
  }

  /**
   * When the wait for a server that refused the first attempt ends: counted from that refusal, so that a slow first
   * attempt (a cold JVM loading the driver on a busy machine) takes none of it, and the operator sees the wait begin.
   */
  private static long waitEnds(Duration connectTimeout) {
    return System.nanoTime() + connectTimeout.toNanos();
  }

  private static String waited(Duration connectTimeout) {
    return connectTimeout.isZero() ? "" : " (waited " + connectTimeout.toMillis() + " ms, --connect-timeout)";
  }

  private static void waitBeforeRetry(int attempt, String server, String where, Duration connectTimeout,
      String why) {
    if (attempt == 0) {
      LoggerFactory.getLogger(Connections.class).warn("waiting up to {} ms for {} at {}: {}",
          connectTimeout.toMillis(), server, where, firstLine(why));
    }
    try {
      Thread.sleep(Math.min(2_000, 100L << Math.min(attempt, 5)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException("interrupted while waiting for " + server + " at " + where);
    }
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "no details";
    }
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }
}
