package dev.handoff.spring.autoconfigure;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.spring.HandoffProperties;
import dev.handoff.spring.HandoffStartupException;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.HostAndPort;

/** Redis as {@code handoff.redis.*} describes it. */
final class RedisSettings {

  private RedisSettings() {}

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
}
