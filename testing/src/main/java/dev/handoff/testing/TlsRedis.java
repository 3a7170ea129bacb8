package dev.handoff.testing;

import java.net.URI;
import javax.net.ssl.SSLParameters;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.embedded.RedisServer;

/**
 * A Redis 7.0.15 server of a test's own that speaks TLS only ({@code --port 0 --tls-port P}) with a certificate of
 * {@link TestCertificates}, on a free port, keeping nothing on disk. With client authentication on, it refuses a
 * client that presents no certificate signed by the same CA.
 */
public final class TlsRedis implements AutoCloseable {

  private final int port;
  private final TestCertificates certificates;
  private final RedisServer server;

  private TlsRedis(int port, TestCertificates certificates, RedisServer server) {
    this.port = port;
    this.certificates = certificates;
    this.server = server;
  }

  /** Starts a server with the server certificate of {@code certificates}; {@code clientAuth} asks for mutual TLS. */
  public static TlsRedis start(TestCertificates certificates, boolean clientAuth) {
    int port = freePort();
    RedisServer server = RedisServer.builder()
        .port(0)
        .tlsPort(port)
        .setting("bind 127.0.0.1")
        .setting("save \"\"")
        .setting("appendonly no")
        .setting("maxmemory-policy noeviction")
        .setting("tls-cert-file " + certificates.serverCertificate())
        .setting("tls-key-file " + certificates.serverKey())
        .setting("tls-ca-cert-file " + certificates.caCertificate())
        .setting("tls-auth-clients " + (clientAuth ? "yes" : "no"))
        .build();
    server.start();
    return new TlsRedis(port, certificates, server);
  }

  /** The TLS port (the server has no plain one). */
  public int port() {
    return port;
  }

  /** {@code rediss://127.0.0.1:<port>}. */
  public URI uri() {
    return URI.create("rediss://127.0.0.1:" + port);
  }

  public TestCertificates certificates() {
    return certificates;
  }

  /**
   * A connection for the test's own set-up and checks: trusts the CA, presents the client certificate, does not
   * check the host name (the server's certificate may name only {@code localhost}).
   */
  // Jedis 8 deprecates the socket factory for SslOptions, which wants keystore files; the factory is at hand here.
  public Jedis admin() {
    return admin(null);
  }

  /** {@link #admin()} for a server that has a password ({@code requirepass}) by now. */
  @SuppressWarnings("deprecation")
  public Jedis admin(String password) {
    return new Jedis(new HostAndPort("127.0.0.1", port), DefaultJedisClientConfig.builder()
        .ssl(true)
        .sslSocketFactory(certificates.clientSocketFactory())
        .sslParameters(new SSLParameters())
        .password(password)
        .resp2()
        .build());
  }

  @Override
  public void close() {
    server.stop();
  }

  private static int freePort() {
    return FreePorts.take();
  }

}
