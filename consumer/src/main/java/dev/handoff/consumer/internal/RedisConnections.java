package dev.handoff.consumer.internal;

import java.time.Duration;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;

/**
 * The two connection pools every consumer keeps, both RESP2 (raw replies are parsed) and both with a finite wait:
 * one for commands, and one for blocking reads whose socket timeout outlasts the BLOCK time, so a half-open
 * connection cannot hang a reader forever and a blocked reader never starves the commands.
 */
final class RedisConnections {

  private RedisConnections() {}

  /** A pool of {@code size} connections for ordinary commands. */
  static RedisClient commands(HostAndPort server, JedisClientConfig base, int size, Duration poolWait) {
    JedisClientConfig config = DefaultJedisClientConfig.builder().from(base).resp2().build();
    return RedisClient.builder().hostAndPort(server).clientConfig(config).poolConfig(pool(size, poolWait)).build();
  }

  /** One connection per reader, with a socket timeout of {@code block} plus a margin of at least a second. */
  static RedisClient blockingReaders(HostAndPort server, JedisClientConfig base, int readers, Duration block,
      Duration poolWait) {
    JedisClientConfig config = DefaultJedisClientConfig.builder().from(base).resp2()
        .blockingSocketTimeoutMillis((int) Math.min(Integer.MAX_VALUE, blockingSocketTimeout(block).toMillis()))
        .build();
    return RedisClient.builder().hostAndPort(server).clientConfig(config).poolConfig(pool(readers, poolWait))
        .build();
  }

  /** The socket timeout of a blocking read: {@code block + max(1 s, block / 2)}. */
  static Duration blockingSocketTimeout(Duration block) {
    long millis = block.toMillis();
    return Duration.ofMillis(millis + Math.max(1_000, millis / 2));
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
