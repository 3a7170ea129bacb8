package dev.handoff.core;

import dev.handoff.core.internal.PemFiles;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * Everything needed to connect to one Redis server, or to a Redis Cluster: its {@link RedisUrl} (server, login,
 * database, TLS or not) and, for {@code rediss://}, how to trust the server and whether to present a client
 * certificate. For a cluster, {@link Builder#cluster(Collection)} names the seed nodes; the URL then gives only the
 * login and TLS (its host is not used, and its database must be 0, the only one a cluster has).
 *
 * <pre>{@code
 * RedisConnectionSpec redis = RedisConnectionSpec.builder("rediss://app:secret@redis.internal:6380")
 *     .caFile(Path.of("/etc/handoff/redis-ca.pem"))                        // else the JVM's truststore
 *     .clientCertificate(Path.of("/etc/handoff/client.pem"), Path.of("/etc/handoff/client.key"))  // mutual TLS
 *     .build();
 * StreamConsumer.builder(dataSource, redis)...
 * RedisClient client = RedisClient.builder().hostAndPort(redis.hostAndPort()).clientConfig(redis.clientConfig())...
 * }</pre>
 *
 * <p>Defaults: the server's certificate is checked against the JVM's default truststore, and the URL's host against
 * the certificate's subject alternative names (an IP address must be listed as an IP entry); no client
 * certificate; connect timeout {@link #DEFAULT_CONNECT_TIMEOUT 2 s} and socket (read) timeout
 * {@link #DEFAULT_SOCKET_TIMEOUT 2 s}, Jedis's own. Blocking reads ({@code XREADGROUP BLOCK}) wait for their
 * block time on top of the socket timeout, as Jedis does.
 *
 * <p>Files are PEM and read once, by {@link Builder#build()}: the CA file holds one or more
 * {@code -----BEGIN CERTIFICATE-----} blocks; the client certificate file holds the client's certificate first,
 * then any intermediates; the key file one unencrypted PKCS#8 {@code -----BEGIN PRIVATE KEY-----} block (RSA or
 * EC). Renewed files take effect in a spec built after the renewal.
 *
 * <p>Immutable and thread-safe; {@link #toString()} never shows the password.
 */
public final class RedisConnectionSpec {

  /** The connect timeout of a spec that sets none (Jedis's default). */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  /** The socket (read) timeout of a spec that sets none (Jedis's default). */
  public static final Duration DEFAULT_SOCKET_TIMEOUT = Duration.ofSeconds(2);

  private final RedisUrl url;
  private final Path caFile;
  private final Path certificateFile;
  private final Path keyFile;
  private final boolean verifyHostname;
  private final Duration connectTimeout;
  private final Duration socketTimeout;
  private final Set<HostAndPort> clusterNodes;
  /** Null for the JVM's default (no CA file and no client certificate) and for {@code redis://}. */
  private final SSLSocketFactory socketFactory;

  private RedisConnectionSpec(Builder b, SSLSocketFactory socketFactory) {
    this.url = b.url;
    this.caFile = b.caFile;
    this.certificateFile = b.certificateFile;
    this.keyFile = b.keyFile;
    this.verifyHostname = b.verifyHostname;
    this.connectTimeout = b.connectTimeout;
    this.socketTimeout = b.socketTimeout;
    this.clusterNodes = Set.copyOf(b.clusterNodes);
    this.socketFactory = socketFactory;
  }

  /** A spec of {@code url} with every default; see the class comment. */
  public static RedisConnectionSpec of(RedisUrl url) {
    return builder(url).build();
  }

  /**
   * A spec of {@code url}, read by {@link RedisUrl#parse(String)}, with every default.
   *
   * @throws IllegalArgumentException if it is not a Redis URL; the message does not show the password
   */
  public static RedisConnectionSpec of(String url) {
    return builder(url).build();
  }

  /**
   * A spec of {@code url}, read by {@link RedisUrl#parse(URI)}, with every default.
   *
   * @throws IllegalArgumentException if it is not a Redis URL; the message does not show the password
   */
  public static RedisConnectionSpec of(URI url) {
    return builder(url).build();
  }

  /** Starts a spec of {@code url}. */
  public static Builder builder(RedisUrl url) {
    return new Builder(Objects.requireNonNull(url, "url"));
  }

  /**
   * Starts a spec of {@code url}, read by {@link RedisUrl#parse(String)}.
   *
   * @throws IllegalArgumentException if it is not a Redis URL; the message does not show the password
   */
  public static Builder builder(String url) {
    return builder(RedisUrl.parse(url));
  }

  /**
   * Starts a spec of {@code url}, read by {@link RedisUrl#parse(URI)}.
   *
   * @throws IllegalArgumentException if it is not a Redis URL; the message does not show the password
   */
  public static Builder builder(URI url) {
    return builder(RedisUrl.parse(url));
  }

  /** The server, login, database and whether TLS is on. */
  public RedisUrl url() {
    return url;
  }

  /** The PEM file of the certificate authorities trusted instead of the JVM's truststore, if one is set. */
  public Optional<Path> caFile() {
    return Optional.ofNullable(caFile);
  }

  /** The PEM file of the client certificate presented for mutual TLS, if one is set. */
  public Optional<Path> certificateFile() {
    return Optional.ofNullable(certificateFile);
  }

  /** The PEM (PKCS#8) file of the client certificate's private key, if one is set. */
  public Optional<Path> keyFile() {
    return Optional.ofNullable(keyFile);
  }

  /** Whether the server's certificate must name the URL's host; true unless turned off explicitly. */
  public boolean verifyHostname() {
    return verifyHostname;
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  public Duration socketTimeout() {
    return socketTimeout;
  }

  /** The server, for Jedis; for a cluster, the first seed node. */
  public HostAndPort hostAndPort() {
    return clusterNodes.isEmpty() ? url.hostAndPort() : clusterNodes.iterator().next();
  }

  /** Whether this is a Redis Cluster ({@link Builder#cluster(Collection) seed nodes} were given). */
  public boolean isCluster() {
    return !clusterNodes.isEmpty();
  }

  /** The seed nodes of a cluster, empty for a single server. */
  public Set<HostAndPort> clusterNodes() {
    return clusterNodes;
  }

  /**
   * Login, database, timeouts and TLS for Jedis. Use it as the base of
   * {@link DefaultJedisClientConfig.Builder#from(JedisClientConfig)} to add, say, a client name.
   */
  // Jedis 8 deprecates the socket factory and parameters for SslOptions, which only reads keystore files; a PEM CA
  // and key become an SSLSocketFactory here instead, which the deprecated setters still take as they are.
  @SuppressWarnings("deprecation")
  public JedisClientConfig clientConfig() {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
        .from(url.clientConfig())
        .connectionTimeoutMillis(millis(connectTimeout))
        .socketTimeoutMillis(millis(socketTimeout));
    if (url.tls()) {
      // Always set: "off" needs parameters without an endpoint check, and "on" should not rest on what Jedis does
      // with no parameters (8.0.2 checks the host then, seen by a probe; a later version need not).
      SSLParameters parameters = new SSLParameters();
      parameters.setEndpointIdentificationAlgorithm(verifyHostname ? "HTTPS" : null);
      config.sslParameters(parameters);
      if (socketFactory != null) {
        config.sslSocketFactory(socketFactory);
      }
    }
    return config.build();
  }

  /** The URL (password as {@code ***}) and the TLS settings that are not defaults. */
  @Override
  public String toString() {
    StringBuilder s = new StringBuilder(url.toString());
    if (!clusterNodes.isEmpty()) {
      s.append(" cluster=").append(clusterNodes);
    }
    if (caFile != null) {
      s.append(" ca=").append(caFile);
    }
    if (certificateFile != null) {
      s.append(" cert=").append(certificateFile).append(" key=").append(keyFile);
    }
    if (url.tls() && !verifyHostname) {
      s.append(" hostname-verification=off");
    }
    return s.toString();
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
  }

  /** Builds a {@link RedisConnectionSpec}. Not thread-safe. */
  public static final class Builder {

    private final RedisUrl url;
    private Path caFile;
    private Path certificateFile;
    private Path keyFile;
    private boolean verifyHostname = true;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration socketTimeout = DEFAULT_SOCKET_TIMEOUT;
    private final Set<HostAndPort> clusterNodes = new LinkedHashSet<>();

    private Builder(RedisUrl url) {
      this.url = url;
    }

    /** Trust the certificate authorities in this PEM file instead of the JVM's truststore. Null for the default. */
    public Builder caFile(Path caFile) {
      this.caFile = caFile;
      return this;
    }

    /**
     * Present this certificate (PEM, the client's own first) with this private key (PEM, unencrypted PKCS#8) for
     * mutual TLS ({@code tls-auth-clients yes}). Both or neither; nulls for none.
     */
    public Builder clientCertificate(Path certificateFile, Path keyFile) {
      this.certificateFile = certificateFile;
      this.keyFile = keyFile;
      return this;
    }

    /**
     * Accept a trusted certificate even if it does not name the URL's host. Only for a server whose certificate
     * cannot be fixed: anyone holding another certificate from the same CA can then pose as this server.
     */
    public Builder disableHostnameVerification() {
      this.verifyHostname = false;
      return this;
    }

    /** How long opening a connection (TCP and TLS handshake) may take. Defaults to 2 s. */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = timeout;
      return this;
    }

    /** How long a reply may take to arrive. Defaults to 2 s. */
    public Builder socketTimeout(Duration timeout) {
      this.socketTimeout = timeout;
      return this;
    }

    /**
     * Connect to the Redis Cluster these nodes belong to (any of its nodes will do; more than one survives a node
     * being down at startup) instead of the URL's server. Jedis's cluster client then follows the slots to their
     * masters. Replaces the seeds of an earlier call; an empty collection means a single server again.
     */
    public Builder cluster(Collection<HostAndPort> seeds) {
      clusterNodes.clear();
      clusterNodes.addAll(Objects.requireNonNull(seeds, "seeds"));
      return this;
    }

    /**
     * Validates the settings and reads the PEM files.
     *
     * @throws IllegalArgumentException naming the setting or the file and what is wrong with it (a file that is
     *     missing, not PEM, a key that is not PKCS#8 or does not belong to the certificate); never the password
     */
    public RedisConnectionSpec build() {
      requirePositive(connectTimeout, "connectTimeout");
      requirePositive(socketTimeout, "socketTimeout");
      if ((certificateFile == null) != (keyFile == null)) {
        throw new IllegalArgumentException("a Redis client certificate needs both files: "
            + (certificateFile == null ? "the certificate" : "the key") + " is missing");
      }
      if (!clusterNodes.isEmpty() && url.database() != 0) {
        throw new IllegalArgumentException("a Redis Cluster has only database 0, the URL names database "
            + url.database());
      }
      boolean custom = caFile != null || certificateFile != null;
      if (!url.tls() && (custom || !verifyHostname)) {
        throw new IllegalArgumentException("TLS settings (CA file, client certificate, hostname verification) need"
            + " a rediss:// URL, was " + url);
      }
      SSLSocketFactory factory =
          custom ? PemFiles.sslContext(caFile, certificateFile, keyFile).getSocketFactory() : null;
      return new RedisConnectionSpec(this, factory);
    }

    private static void requirePositive(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero() || d.toMillis() == 0) {
        throw new IllegalArgumentException(name + " must be at least 1 ms, was " + d);
      }
    }
  }
}
