package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Connections;
import dev.handoff.cli.RedisTlsOptions;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.migrations.HandoffMigrations;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

/**
 * The options every command takes (ledger-demo's {@code naive-consume} too): where PostgreSQL and Redis are, and the
 * names inside them.
 */
public final class ConnectionOptions {

  private static final Duration CONSUMER_SOCKET_TIMEOUT = Duration.ofSeconds(5);

  @Option(names = "--jdbc-url", defaultValue = "${env:HANDOFF_JDBC_URL}",
      description = "PostgreSQL JDBC URL; user and password as URL parameters (env HANDOFF_JDBC_URL)")
  String jdbcUrl;

  @Option(names = "--redis-url", defaultValue = "${env:HANDOFF_REDIS_URL}",
      description = "redis[s]://[[user]:password@]host[:port][/db] (env HANDOFF_REDIS_URL)")
  String redisUrl;

  @Option(names = "--redis-cluster", defaultValue = "${env:HANDOFF_REDIS_CLUSTER}", split = ",",
      paramLabel = "HOST:PORT", description = "seed nodes of a Redis Cluster, comma-separated, in place of"
          + " --redis-url's server; --redis-url then gives only the login and rediss:// for TLS, and may be left out"
          + " (env HANDOFF_REDIS_CLUSTER)")
  List<String> redisCluster;

  @Mixin
  RedisTlsOptions redisTls = new RedisTlsOptions();

  @Option(names = "--connect-timeout", defaultValue = "${env:HANDOFF_CONNECT_TIMEOUT:-30s}",
      description = "how long to wait at startup for a PostgreSQL or Redis that refuses or does not answer, e.g."
          + " 30s (env HANDOFF_CONNECT_TIMEOUT; default ${DEFAULT-VALUE})")
  Duration connectTimeout;

  @Option(names = "--schema", defaultValue = "${env:HANDOFF_SCHEMA:-" + HandoffMigrations.DEFAULT_SCHEMA + "}",
      description = "schema of handoff's and the ledger's tables (env HANDOFF_SCHEMA; default ${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--key-prefix", defaultValue = "${env:HANDOFF_KEY_PREFIX:-" + StreamFormat.DEFAULT_KEY_PREFIX + "}",
      description = "prefix of the Redis keys (env HANDOFF_KEY_PREFIX; default ${DEFAULT-VALUE})")
  String keyPrefix;

  /** {@code --schema}, checked. */
  public String schema() {
    try {
      return LedgerMigrations.requireValidSchema(schema);
    } catch (IllegalArgumentException e) {
      throw new LedgerException("--schema: " + e.getMessage());
    }
  }

  /** {@code --key-prefix}, checked. */
  public String keyPrefix() {
    try {
      return StreamFormat.requireValidKeyPrefix(keyPrefix);
    } catch (IllegalArgumentException e) {
      throw new LedgerException("--key-prefix: " + e.getMessage());
    }
  }

  /** A pool to PostgreSQL that answered, or a one-line error. */
  HikariDataSource database(int maxConnections, String poolName) {
    if (jdbcUrl == null || jdbcUrl.isBlank()) {
      throw new LedgerException("--jdbc-url or HANDOFF_JDBC_URL is required");
    }
    return Connections.database(jdbcUrl, maxConnections, poolName, connectTimeout);
  }

  /**
   * A pool to PostgreSQL whose schema holds handoff's tables and the ledger's (created here the first time; see
   * {@link LedgerMigrations#ensureTables}).
   */
  public HikariDataSource migratedDatabase(int maxConnections, String poolName) {
    String s = schema();
    HikariDataSource db = database(maxConnections, poolName);
    try {
      LedgerMigrations.ensureTables(db, s);
    } catch (RuntimeException e) {
      db.close();
      throw e;
    }
    return db;
  }

  /** A Redis client (of the cluster with {@code --redis-cluster}) that answered, or a one-line error. */
  public UnifiedJedis redis(int maxConnections) {
    requireRedisUrl();
    return Connections.client(redisTlsSpec(RedisConnectionSpec.DEFAULT_SOCKET_TIMEOUT), maxConnections,
        connectTimeout);
  }

  /**
   * The Redis server, login and TLS for handoff's consumer, which opens its own connections; its socket timeout is
   * 5 s unless {@code --redis-socket-timeout} says otherwise.
   */
  RedisConnectionSpec consumerRedis() {
    requireRedisUrl();
    return redisTlsSpec(CONSUMER_SOCKET_TIMEOUT);
  }

  private RedisConnectionSpec redisTlsSpec(Duration defaultSocketTimeout) {
    try {
      List<HostAndPort> seeds = Connections.clusterSeeds(redisCluster);
      // On a cluster the URL only logs in; without one, no login and no TLS.
      String url = redisUrl == null && !seeds.isEmpty() ? "redis://" + seeds.get(0) : redisUrl;
      return redisTls.spec(url, defaultSocketTimeout, seeds);
    } catch (Connections.UnreachableException e) {
      throw new LedgerException(e.getMessage()); // one line, the password masked
    }
  }

  private void requireRedisUrl() {
    if ((redisUrl == null || redisUrl.isBlank()) && (redisCluster == null || redisCluster.isEmpty())) {
      throw new LedgerException("--redis-url or HANDOFF_REDIS_URL (or --redis-cluster) is required");
    }
  }
}
