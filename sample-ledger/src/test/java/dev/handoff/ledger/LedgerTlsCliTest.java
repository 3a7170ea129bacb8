package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestCertificates;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testing.TlsRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ledger against a Redis that speaks mutual TLS only: handoff.jar's {@code relay} and {@code status} and the
 * sample's {@code consume}, with {@code --redis-ca}, {@code --redis-cert} and {@code --redis-key}, as separate
 * processes.
 */
@HandoffTest
class LedgerTlsCliTest {

  private static final int PAYMENTS = 200;

  @TempDir
  Path dir;

  private final TestEnvironment env;

  LedgerTlsCliTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void payRelayConsumeAndStatusOverMutualTls() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir, "ip:127.0.0.1,dns:localhost");
    try (TlsRedis redis = TlsRedis.start(certs, true)) {
      List<String> tls = List.of("--redis-url", "rediss://127.0.0.1:" + redis.port(),
          "--redis-ca", certs.caCertificate().toString(), "--redis-cert", certs.clientCertificate().toString(),
          "--redis-key", certs.clientKey().toString());
      CliProcess migrate = CliProcess.handoff("migrate", "--jdbc-url", env.postgres().jdbcUrl(), "--schema",
          env.schema());
      assertThat(migrate.waitFor(60)).as("migrate; stderr: %s", migrate.stderr()).isZero();
      CliProcess relay = handoff(tls, "relay", "--topics", "payments:4");
      CliProcess consumer = cli(tls, "consume", "--name", "tls-a");
      try {
        CliProcess pay = cli(List.of(), "pay", "--count", Integer.toString(PAYMENTS));
        assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'") == PAYMENTS);
        relay.process.destroy();
        consumer.process.destroy();
        assertThat(relay.waitFor(30)).as("relay; stderr: %s", relay.stderr()).isZero();
        assertThat(consumer.waitFor(30)).as("consume; stderr: %s", consumer.stderr()).isZero();
      } finally {
        relay.process.destroyForcibly();
        consumer.process.destroyForcibly();
      }
      CliProcess status = handoff(tls, "status", "--topic", PaymentEvents.TOPIC);
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout())
          .contains("group ledger: backlog 0 (never delivered), pending 0 (delivered, not acknowledged)");
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isZero();
      assertThat(env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'")).isEqualTo(PAYMENTS);

      // The ledger's consumer without the client certificate: one line that names the cause.
      CliProcess refused = cli(tls.subList(0, 4), "consume");
      assertThat(refused.waitFor(60)).isNotZero();
      assertThat(refused.stderrLines()).hasSize(1);
      assertThat(refused.stderrLines().get(0)).startsWith("sample-ledger: cannot connect to Redis at rediss://"
          + "127.0.0.1:" + redis.port() + "/0: TLS: the server").contains("client certificate (mutual TLS)");
    }
  }

  private CliProcess cli(List<String> redis, String... args) throws Exception {
    return CliProcess.start(withOptions(redis, args));
  }

  /** The operator's {@code handoff <args>} ({@code relay}, {@code status}) with these Redis options. */
  private CliProcess handoff(List<String> redis, String... args) throws Exception {
    return CliProcess.handoff(withOptions(redis, args));
  }

  private String[] withOptions(List<String> redis, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema(), "--key-prefix",
        env.keyPrefix()));
    all.addAll(redis);
    return all.toArray(String[]::new);
  }
}
