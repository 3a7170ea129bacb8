package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.testing.TestCertificates;
import dev.handoff.testing.TlsRedis;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * Redis over TLS from a {@link RedisConnectionSpec}, against real TLS-only servers with certificates made for the
 * test: what works, and that each usual mistake is one line that names its cause and never the password.
 */
class RedisTlsConnectionsTest {

  private static final String PASSWORD = "hunter2";

  @TempDir
  static Path dir;

  private static TestCertificates certs;
  private static TestCertificates otherCa;
  private static TestCertificates localhostOnly;
  private static TlsRedis server;
  private static TlsRedis mutual;
  private static TlsRedis localhostServer;

  @BeforeAll
  static void startServers() {
    certs = TestCertificates.generate(dir.resolve("good"), "ip:127.0.0.1,dns:localhost");
    otherCa = TestCertificates.authority(dir.resolve("other"));
    localhostOnly = TestCertificates.generate(dir.resolve("localhost"), "dns:localhost");
    server = withPassword(TlsRedis.start(certs, false));
    mutual = withPassword(TlsRedis.start(certs, true));
    localhostServer = withPassword(TlsRedis.start(localhostOnly, false));
  }

  @AfterAll
  static void stopServers() {
    for (TlsRedis s : new TlsRedis[] {server, mutual, localhostServer}) {
      if (s != null) {
        s.close();
      }
    }
  }

  @Test
  void aCaFileIsTrustedAndTheHostChecked() {
    try (RedisClient redis = Connections.redis(spec(server, b -> b.caFile(certs.caCertificate())), 2)) {
      redis.set("tls-key", "v");
      assertThat(redis.get("tls-key")).isEqualTo("v");
    }
    try (Jedis admin = server.admin(PASSWORD)) {
      assertThat(admin.get("tls-key")).as("written through TLS, read back by another client").isEqualTo("v");
    }
  }

  @Test
  void mutualTlsPresentsTheClientCertificateAndWithoutOneIsRefusedInOneLine() {
    try (RedisClient redis = Connections.redis(spec(mutual, b -> b.caFile(certs.caCertificate())
        .clientCertificate(certs.clientCertificate(), certs.clientKey())), 2)) {
      assertThat(redis.ping()).isEqualTo("PONG");
    }
    // Which of the two a client sees depends on whether its first read or its first write meets the server's
    // refusal (TLS 1.3 finishes the client's side of the handshake first); both name the cause.
    RedisConnectionSpec noCertificate = spec(mutual, b -> b.caFile(certs.caCertificate()));
    assertOneLineFailure(noCertificate, message -> assertThat(message).isIn(
        prefix(noCertificate) + "TLS: the server requires a client certificate (mutual TLS) and none was given",
        prefix(noCertificate) + "TLS: the server closed the connection after the handshake; if it requires a"
            + " client certificate (mutual TLS), none was given"));
  }

  @Test
  void aCertificateFromAnotherCaIsNotTrusted() {
    assertOneLineFailure(spec(server, b -> b.caFile(otherCa.caCertificate())),
        "TLS: the server's certificate is not trusted (not signed by a CA in " + otherCa.caCertificate() + ")");
    assertOneLineFailure(spec(server, b -> b),
        "TLS: the server's certificate is not trusted (not signed by a CA of the JVM's truststore)");
  }

  @Test
  void plainRedisAgainstTheTlsPortSaysItIsATlsPort() {
    RedisConnectionSpec plain = RedisConnectionSpec.builder("redis://:" + PASSWORD + "@127.0.0.1:" + server.port())
        .build();
    assertOneLineFailure(plain, "the server closed the connection on the first command: is it a TLS port?"
        + " (the URL is redis://; use rediss:// for TLS)");
  }

  @Test
  void aHostTheCertificateDoesNotNameIsRefusedUnlessVerificationIsTurnedOffExplicitly() {
    assertOneLineFailure(spec(localhostServer, b -> b.caFile(localhostOnly.caCertificate())),
        "TLS: the server's certificate does not name the host '127.0.0.1' (hostname verification is on; list the"
            + " host in the certificate's subject alternative names)");
    try (RedisClient redis = Connections.redis(spec(localhostServer,
        b -> b.caFile(localhostOnly.caCertificate()).disableHostnameVerification()), 2)) {
      assertThat(redis.ping()).isEqualTo("PONG");
    }
  }

  @Test
  void filesThatAreNotPemOrNotPkcs8OrDoNotMatchAreNamedWithWhatIsWrong() throws Exception {
    Path notPem = Files.writeString(dir.resolve("ca.txt"), "not a certificate");
    assertSpecRefused(b -> b.caFile(notPem), "the Redis CA file " + notPem
        + " is not PEM with a -----BEGIN CERTIFICATE----- block");
    Path missing = dir.resolve("missing.pem");
    assertSpecRefused(b -> b.caFile(missing), "the Redis CA file " + missing + " cannot be read: "
        + "java.nio.file.NoSuchFileException: " + missing);
    Path pkcs1 = Files.writeString(dir.resolve("rsa.key"),
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
    assertSpecRefused(b -> b.clientCertificate(certs.clientCertificate(), pkcs1), "the Redis client key file "
        + pkcs1 + " holds a -----BEGIN RSA PRIVATE KEY----- block (PKCS#1/SEC1), not PKCS#8; convert it with:"
        + " openssl pkcs8 -topk8 -nocrypt -in rsa.key -out key.pk8.pem");
    assertSpecRefused(b -> b.clientCertificate(certs.clientCertificate(), certs.serverKey()),
        "the Redis client key file " + certs.serverKey() + " is not the key of the certificate in "
            + certs.clientCertificate());
    assertSpecRefused(b -> b.clientCertificate(certs.clientCertificate(), null),
        "a Redis client certificate needs both files: the key is missing");
  }

  @Test
  void tlsSettingsOnAPlainUrlAreRefusedRatherThanIgnored() {
    assertThatThrownBy(() -> RedisConnectionSpec.builder("redis://:" + PASSWORD + "@cache")
        .caFile(certs.caCertificate()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("TLS settings (CA file, client certificate, hostname verification) need a rediss:// URL, was"
            + " redis://:***@cache:6379/0");
  }

  private static void assertOneLineFailure(RedisConnectionSpec spec, String cause) {
    assertOneLineFailure(spec, message -> assertThat(message).isEqualTo(prefix(spec) + cause));
  }

  private static void assertOneLineFailure(RedisConnectionSpec spec, Consumer<String> message) {
    assertThatThrownBy(() -> Connections.redis(spec, 1).close())
        .isInstanceOf(Connections.UnreachableException.class)
        .satisfies(e -> message.accept(e.getMessage()))
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(PASSWORD).doesNotContain("\n"));
  }

  private static String prefix(RedisConnectionSpec spec) {
    return "cannot connect to Redis at " + spec.url() + ": ";
  }

  private static void assertSpecRefused(UnaryOperator<RedisConnectionSpec.Builder> settings, String message) {
    assertThatThrownBy(() -> settings.apply(RedisConnectionSpec.builder(server.uri())).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessage(message);
  }

  private static RedisConnectionSpec spec(TlsRedis target, UnaryOperator<RedisConnectionSpec.Builder> settings) {
    return settings.apply(RedisConnectionSpec.builder("rediss://:" + PASSWORD + "@127.0.0.1:" + target.port()))
        .build();
  }

  private static TlsRedis withPassword(TlsRedis s) {
    try (Jedis admin = s.admin()) {
      admin.configSet("requirepass", PASSWORD);
    }
    return s;
  }
}
