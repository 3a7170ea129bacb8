package dev.handoff.cli;

import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import redis.clients.jedis.HostAndPort;

/** The Redis options every handoff command shares (a picocli mixin), each with an environment variable. */
public final class RedisOptions {

  @Option(names = "--redis-url", defaultValue = "${env:HANDOFF_REDIS_URL:-redis://127.0.0.1:6379}",
      description = "redis[s]://[[user]:password@]host[:port][/db] (env HANDOFF_REDIS_URL; default ${DEFAULT-VALUE})")
  String redisUrl;

  @Option(names = "--redis-cluster", defaultValue = "${env:HANDOFF_REDIS_CLUSTER}", split = ",",
      paramLabel = "HOST:PORT", description = "seed nodes of a Redis Cluster, comma-separated, in place of"
          + " --redis-url's server; --redis-url then gives only the login and rediss:// for TLS (env"
          + " HANDOFF_REDIS_CLUSTER)")
  List<String> redisCluster;

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

  /** The URL with the TLS and timeout options, and the cluster's seeds if {@code --redis-cluster} names them. */
  public RedisConnectionSpec spec() {
    return tls.spec(redisUrl, RedisConnectionSpec.DEFAULT_SOCKET_TIMEOUT, seeds());
  }

  /**
   * The spec, once the server (or cluster) answers: waits for it up to {@code connectTimeout}, as a command started
   * beside a server that is still starting must, and fails with one line naming what is wrong. The components then
   * open their own pools from the spec.
   */
  public RedisConnectionSpec awaitReachable(Duration connectTimeout) {
    RedisConnectionSpec spec = spec();
    Connections.client(spec, 1, connectTimeout).close();
    return spec;
  }

  /** The seeds of {@code --redis-cluster}, empty without it; a seed that is not host:port is a one-line error. */
  List<HostAndPort> seeds() {
    return Connections.clusterSeeds(redisCluster);
  }
}
