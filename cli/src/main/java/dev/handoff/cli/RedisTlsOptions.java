package dev.handoff.cli;

import dev.handoff.core.RedisConnectionSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Option;
import redis.clients.jedis.HostAndPort;

/**
 * The TLS and timeout options of every command-line tool that connects to Redis (a picocli mixin), each with an
 * environment variable; together with the tool's {@code --redis-url} they make a {@link RedisConnectionSpec}.
 */
public final class RedisTlsOptions {

  @Option(names = "--redis-ca", defaultValue = "${env:HANDOFF_REDIS_CA}",
      description = "PEM file of the CA certificate(s) to trust for rediss:// instead of the JVM's truststore"
          + " (env HANDOFF_REDIS_CA)")
  Path ca;

  @Option(names = "--redis-cert", defaultValue = "${env:HANDOFF_REDIS_CERT}",
      description = "PEM file of the client certificate for mutual TLS, with --redis-key (env HANDOFF_REDIS_CERT)")
  Path certificate;

  @Option(names = "--redis-key", defaultValue = "${env:HANDOFF_REDIS_KEY}",
      description = "PEM file of the client certificate's unencrypted PKCS#8 private key (env HANDOFF_REDIS_KEY)")
  Path key;

  @Option(names = "--redis-no-verify-hostname",
      defaultValue = "${env:HANDOFF_REDIS_NO_VERIFY_HOSTNAME:-false}",
      description = "accept a trusted server certificate that does not name the URL's host (env"
          + " HANDOFF_REDIS_NO_VERIFY_HOSTNAME=true; default: verify)")
  boolean noVerifyHostname;

  @Option(names = "--redis-connect-timeout", defaultValue = "${env:HANDOFF_REDIS_CONNECT_TIMEOUT:-PT2S}",
      description = "connect and TLS handshake timeout, ISO-8601 (env HANDOFF_REDIS_CONNECT_TIMEOUT;"
          + " default ${DEFAULT-VALUE})")
  Duration connectTimeout;

  @Option(names = "--redis-socket-timeout", defaultValue = "${env:HANDOFF_REDIS_SOCKET_TIMEOUT}",
      description = "how long a Redis reply may take, ISO-8601 (env HANDOFF_REDIS_SOCKET_TIMEOUT; default PT2S;"
          + " the sample ledger's consumers PT5S)")
  Duration socketTimeout;

  /**
   * The spec of {@code redisUrl} with these options, the socket timeout {@code defaultSocketTimeout} unless set;
   * or a one-line {@link Connections.UnreachableException} naming the option or file that is wrong.
   */
  public RedisConnectionSpec spec(String redisUrl, Duration defaultSocketTimeout) {
    return spec(redisUrl, defaultSocketTimeout, List.of());
  }

  /** As {@link #spec(String, Duration)}, for the Redis Cluster of {@code clusterSeeds} unless that is empty. */
  public RedisConnectionSpec spec(String redisUrl, Duration defaultSocketTimeout, List<HostAndPort> clusterSeeds) {
    return Connections.redisSpec(redisUrl, url -> {
      RedisConnectionSpec.Builder b = RedisConnectionSpec.builder(url)
          .caFile(ca)
          .clientCertificate(certificate, key)
          .connectTimeout(connectTimeout)
          .socketTimeout(socketTimeout != null ? socketTimeout : defaultSocketTimeout)
          .cluster(clusterSeeds);
      if (noVerifyHostname) {
        b.disableHostnameVerification();
      }
      return b;
    });
  }

  /** The spec of {@code redisUrl} with these options and the default socket timeout (2 s) unless set. */
  public RedisConnectionSpec spec(String redisUrl) {
    return spec(redisUrl, RedisConnectionSpec.DEFAULT_SOCKET_TIMEOUT);
  }
}
