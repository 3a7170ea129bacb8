package dev.handoff.consumer.internal;

import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * The two connection pools every consumer keeps, both RESP2 (raw replies are parsed) and both with a finite wait:
 * one for commands, and one for blocking reads whose socket timeout outlasts the BLOCK time, so a half-open
 * connection cannot hang a reader forever and a blocked reader never starves the commands.
 */
public final class RedisConnections {

  private RedisConnections() {}

  /**
   * A pool of {@code size} connections for ordinary commands: to {@code server}, or with {@code cluster} seeds a
   * cluster client with a pool of that size per node.
   */
  static UnifiedJedis commands(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig base, int size,
      Duration poolWait) {
    JedisClientConfig config = DefaultJedisClientConfig.builder().from(base).resp2().build();
    return client(server, cluster, config, pool(size, poolWait));
  }

  /** One connection per reader, with a socket timeout of {@code block} plus a margin of at least a second. */
  static UnifiedJedis blockingReaders(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig base,
      int readers, Duration block, Duration poolWait) {
    JedisClientConfig config = DefaultJedisClientConfig.builder().from(base).resp2()
        .blockingSocketTimeoutMillis((int) Math.min(Integer.MAX_VALUE, blockingSocketTimeout(block).toMillis()))
        .build();
    return client(server, cluster, config, pool(readers, poolWait));
  }

  private static UnifiedJedis client(HostAndPort server, Set<HostAndPort> cluster, JedisClientConfig config,
      ConnectionPoolConfig pool) {
    if (cluster.isEmpty()) {
      return RedisClient.builder().hostAndPort(server).clientConfig(config).poolConfig(pool).build();
    }
    return RedisClusterClient.builder().nodes(cluster).clientConfig(config).poolConfig(pool).build();
  }

  /** The socket timeout of a blocking read: {@code block + max(1 s, block / 2)}. */
  static Duration blockingSocketTimeout(Duration block) {
    long millis = block.toMillis();
    return Duration.ofMillis(millis + Math.max(1_000, millis / 2));
  }

  /**
   * Runs an idempotent command, and once more after a connection failure, on a connection opened afresh. A Redis
   * that restarted leaves every idle pooled connection broken, and each would fail once: an acknowledgement lost
   * that way costs a redelivery after {@code minIdle}. So the pool's idle connections are dropped before the second
   * try; a second failure is thrown, with the first one suppressed in it.
   */
  static <T> T onceMoreOnBrokenConnection(UnifiedJedis client, Supplier<T> idempotent) {
    try {
      return idempotent.get();
    } catch (JedisConnectionException first) {
      dropIdle(client);
      try {
        return idempotent.get();
      } catch (JedisConnectionException again) {
        again.addSuppressed(first);
        throw again;
      }
    }
  }

  /**
   * Drops the idle connections of each pool, after a connection failure: if Redis restarted they are all broken, and
   * each would fail once more, whoever borrowed it next (a status read, an acknowledgement).
   */
  static void dropIdle(UnifiedJedis... clients) {
    for (UnifiedJedis client : clients) {
      if (client instanceof RedisClient single) {
        single.getPool().clear();
      } else if (client instanceof RedisClusterClient cluster) {
        cluster.getClusterNodes().values().forEach(ConnectionPool::clear);
      }
    }
  }

  private static ConnectionPoolConfig pool(int size, Duration poolWait) {
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(size);
    pool.setMaxIdle(size);
    pool.setMaxWait(poolWait);
    pool.setBlockWhenExhausted(true);
    return pool;
  }
}
