package dev.handoff.spring.autoconfigure;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.spring.HandoffProperties;
import dev.handoff.spring.HandoffStartupException;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;

/** Redis as {@code handoff.redis.*} describes it. */
final class RedisClients {

  private RedisClients() {}

  /**
   * The connection facts of {@code handoff.redis}.
   *
   * @throws HandoffStartupException naming the property that is missing or wrong
   */
  static RedisConnectionSpec spec(HandoffProperties.Redis redis) {
    if (redis.getUrl() == null || redis.getUrl().isBlank()) {
      throw new HandoffStartupException("handoff.redis.url is not set: give the Redis server as redis://host:port"
          + " (rediss:// for TLS)");
    }
    try {
      RedisConnectionSpec.Builder b = RedisConnectionSpec.builder(redis.getUrl())
          .connectTimeout(redis.getConnectTimeout())
          .socketTimeout(redis.getSocketTimeout());
      if (redis.getCaFile() != null) {
        b.caFile(redis.getCaFile());
      }
      if (redis.getCertificateFile() != null || redis.getKeyFile() != null) {
        b.clientCertificate(redis.getCertificateFile(), redis.getKeyFile());
      }
      if (!redis.isVerifyHostname()) {
        b.disableHostnameVerification();
      }
      if (!redis.getClusterSeeds().isEmpty()) {
        List<HostAndPort> seeds = new ArrayList<>();
        for (String seed : redis.getClusterSeeds()) {
          seeds.add(HostAndPort.from(seed.strip()));
        }
        b.cluster(seeds);
      }
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new HandoffStartupException("handoff.redis: " + e.getMessage(), e);
    }
  }

  /** A client of the server or cluster of {@code spec}, RESP2, named {@code name} in CLIENT LIST. */
  static UnifiedJedis open(RedisConnectionSpec spec, String name) {
    DefaultJedisClientConfig config = DefaultJedisClientConfig.builder()
        .from(spec.clientConfig())
        .resp2()
        .clientName(name)
        .build();
    return spec.isCluster()
        ? RedisClusterClient.builder().nodes(spec.clusterNodes()).clientConfig(config).build()
        : RedisClient.builder().hostAndPort(spec.hostAndPort()).clientConfig(config).build();
  }
}
