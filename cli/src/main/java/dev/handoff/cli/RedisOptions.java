package dev.handoff.cli;

import dev.handoff.outbox.RedisConnectionSpec;
import java.time.Duration;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import redis.clients.jedis.RedisClient;

/** The Redis options every handoff command shares (a picocli mixin), each with an environment variable. */
public final class RedisOptions {

  @Option(names = "--redis-url", defaultValue = "${env:HANDOFF_REDIS_URL:-redis://127.0.0.1:6379}",
      description = "redis[s]://[[user]:password@]host[:port][/db] (env HANDOFF_REDIS_URL; default ${DEFAULT-VALUE})")
  String redisUrl;

  @Mixin
  RedisTlsOptions tls = new RedisTlsOptions();

  @Option(names = "--key-prefix", defaultValue = "${env:HANDOFF_KEY_PREFIX:-handoff}",
      description = "Redis key prefix (env HANDOFF_KEY_PREFIX; default ${DEFAULT-VALUE})")
  String keyPrefix;

  /** The prefix of handoff's Redis keys. */
  public String keyPrefix() {
    return keyPrefix;
  }

  /** The URL as given, masked for logs. */
  public String maskedUrl() {
    return Connections.mask(redisUrl);
  }

  /** The URL with the TLS and timeout options. */
  public RedisConnectionSpec spec() {
    return tls.spec(redisUrl);
  }

  /** A pooled client of at most {@code maxConnections}, waiting for the server up to {@code connectTimeout}. */
  public RedisClient open(int maxConnections, Duration connectTimeout) {
    return Connections.redis(spec(), maxConnections, connectTimeout);
  }
}
