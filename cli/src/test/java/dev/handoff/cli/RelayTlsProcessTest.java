package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamFormat;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestCertificates;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testing.TlsRedis;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/** The standalone relay as a real process against a TLS-only Redis, configured by flags and by environment. */
@HandoffTest
class RelayTlsProcessTest {

  private static final int MESSAGES = 100;
  private static final String PASSWORD = "hunter2";

  @TempDir
  static Path dir;

  private static TestCertificates certs;
  private static TlsRedis server;
  private static TlsRedis mutual;

  private final TestEnvironment env;

  RelayTlsProcessTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeAll
  static void startServers() {
    certs = TestCertificates.generate(dir.resolve("certs"), "ip:127.0.0.1,dns:localhost");
    server = TlsRedis.start(certs, false);
    mutual = TlsRedis.start(certs, true);
    for (TlsRedis s : new TlsRedis[] {server, mutual}) {
      try (Jedis admin = s.admin()) {
        admin.configSet("requirepass", PASSWORD);
      }
    }
  }

  @AfterAll
  static void stopServers() {
    if (server != null) {
      server.close();
    }
    if (mutual != null) {
      mutual.close();
    }
  }

  @Test
  void withRedisCaTheRelayPublishesEveryRowOverTlsAndStopsCleanly() throws Exception {
    appendAll("tls-flags");
    Process relay = start(command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", url(server),
        "--redis-ca", certs.caCertificate().toString(), "--topics", "tls-flags", "--schema", env.schema(),
        "--key-prefix", env.keyPrefix(), "--lease-ttl", "PT5S"), "flags");
    assertPublishedAndStopped(relay, server, "tls-flags");
  }

  @Test
  void mutualTlsFromEnvironmentVariablesAlone() throws Exception {
    appendAll("tls-env");
    ProcessBuilder pb = command();
    pb.environment().putAll(Map.of("HANDOFF_JDBC_URL", env.postgres().jdbcUrl(), "HANDOFF_REDIS_URL", url(mutual),
        "HANDOFF_REDIS_CA", certs.caCertificate().toString(),
        "HANDOFF_REDIS_CERT", certs.clientCertificate().toString(),
        "HANDOFF_REDIS_KEY", certs.clientKey().toString(),
        "HANDOFF_REDIS_CONNECT_TIMEOUT", "PT5S", "HANDOFF_REDIS_SOCKET_TIMEOUT", "PT5S",
        "HANDOFF_TOPICS", "tls-env", "HANDOFF_SCHEMA", env.schema(), "HANDOFF_KEY_PREFIX", env.keyPrefix()));
    assertPublishedAndStopped(start(pb, "env"), mutual, "tls-env");
  }

  @Test
  void anUntrustedCertificateIsOneLineWithoutThePassword() throws Exception {
    TestCertificates other = TestCertificates.authority(dir.resolve("other"));
    ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", url(server),
        "--redis-ca", other.caCertificate().toString(), "--topics", "orders", "--schema", env.schema());
    Path err = Files.createTempFile(dir, "relay", ".err");
    pb.redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process p = pb.start();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(Files.readAllLines(err)).containsExactly("handoff: cannot connect to Redis at rediss://:***@"
        + "127.0.0.1:" + server.port() + "/0: TLS: the server's certificate is not trusted (not signed by a CA in "
        + other.caCertificate() + ")");
  }

  private void appendAll(String topic) throws Exception {
    List<Message> messages = IntStream.range(0, MESSAGES)
        .mapToObj(i -> Message.builder(topic, "order.placed").payload("m" + i).build()).toList();
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, messages);
      tx.commit();
    }
  }

  private void assertPublishedAndStopped(Process relay, TlsRedis target, String topic) throws Exception {
    try {
      await().atMost(Duration.ofSeconds(60))
          .until(() -> env.queryLong("select count(*) from outbox where published_at is null") == 0);
    } finally {
      relay.destroy(); // SIGTERM
    }
    assertThat(relay.waitFor(15, TimeUnit.SECONDS)).isTrue();
    assertThat(relay.exitValue()).isZero();
    try (Jedis admin = target.admin(PASSWORD)) {
      assertThat(admin.xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0))).isEqualTo(MESSAGES);
    }
  }

  private static String url(TlsRedis target) {
    return "rediss://:" + PASSWORD + "@127.0.0.1:" + target.port();
  }

  private static Process start(ProcessBuilder pb, String name) throws Exception {
    Path log = Files.createTempFile(dir, "relay-" + name, ".log");
    pb.redirectErrorStream(true).redirectOutput(log.toFile());
    return pb.start();
  }

  private static ProcessBuilder command(String... args) {
    return HandoffProcess.relay(args);
  }
}
