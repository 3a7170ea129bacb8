package dev.handoff.core.internal;

import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * The one way handoff opens a Redis client from a {@link RedisConnectionSpec}: a pooled client of the spec's server,
 * or for a cluster spec a cluster client with a pool per node, speaking RESP2 (the replies handoff parses), under the
 * spec's login, TLS and timeouts. Opening does not connect (a cluster client reads the slot map from a seed).
 */
public final class RedisClients {

  private RedisClients() {}

  /**
   * Opens a client with at most {@code maxConnections} connections (per node of a cluster), whose commands wait up
   * to {@code poolWait} for a free one; {@code clientName} is what {@code CLIENT LIST} shows.
   */
  public static UnifiedJedis open(RedisConnectionSpec spec, int maxConnections, Duration poolWait,
      String clientName) {
    JedisClientConfig config = DefaultJedisClientConfig.builder().from(spec.clientConfig()).resp2()
        .clientName(clientName).build();
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(maxConnections);
    pool.setMaxIdle(maxConnections);
    pool.setMaxWait(poolWait);
    pool.setBlockWhenExhausted(true);
    return spec.isCluster()
        ? RedisClusterClient.builder().nodes(spec.clusterNodes()).clientConfig(config).poolConfig(pool).build()
        : RedisClient.builder().hostAndPort(spec.hostAndPort()).clientConfig(config).poolConfig(pool).build();
  }
}
