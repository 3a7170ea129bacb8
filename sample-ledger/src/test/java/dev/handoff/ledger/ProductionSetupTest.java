package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.RedisAcl;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestCertificates;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testing.TlsRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * The production checklist of docs/operations.md, all at once: a Redis that speaks TLS only, a Redis user per
 * component with exactly its {@link RedisAcl} rule, PgBouncer in transaction pooling in front of PostgreSQL, and a
 * database role per component with exactly handoff's grants (plus the sample's own tables, which are the
 * application's to grant). handoff.jar's relay and status and the sample's pay and consume run as separate processes,
 * each as its own users; every payment is charged once, and nothing is refused along the way but the SCAN the
 * operator's Redis rule leaves out by design.
 */
@HandoffTest
class ProductionSetupTest {

  private static final int PAYMENTS = 300;

  @TempDir
  Path dir;

  private final TestEnvironment env;

  ProductionSetupTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void theLedgerRunsEndToEndOnTlsRedisAclUsersPgBouncerTransactionPoolingAndLeastPrivilegeRoles() throws Exception {
    LedgerMigrations.migrate(env.dataSource(), env.schema()); // as the tables' owner, on a direct connection
    String s = env.schema();
    DatabaseRole application = env.newRole().grant(Role.APPLICATION)
        .execute("GRANT SELECT, INSERT, UPDATE ON " + s + ".payment TO ROLE");
    DatabaseRole relay = env.newRole().grant(Role.RELAY);
    DatabaseRole consumer = env.newRole().grant(Role.CONSUMER)
        .execute("GRANT SELECT, INSERT, UPDATE ON " + s + ".charge, " + s + ".payment, " + s + ".consumer_stats"
            + " TO ROLE", "GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + s + " TO ROLE");
    DatabaseRole operator = env.newRole().grant(Role.OPERATOR);
    TestCertificates certs = TestCertificates.generate(dir, "ip:127.0.0.1,dns:localhost");
    try (TlsRedis redis = TlsRedis.start(certs, false);
        PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION, application.name(), relay.name(),
            consumer.name(), operator.name())) {
      String prefix = env.keyPrefix();
      try (Jedis admin = redis.admin()) {
        admin.aclSetUser("relay", rule("relay", RedisAcl.relay(prefix)));
        admin.aclSetUser("ledger", rule("ledger", RedisAcl.streamConsumer(prefix)));
        admin.aclSetUser("operator", rule("operator", RedisAcl.operator(prefix)));
        admin.aclLogReset();
      }

      CliProcess relayProcess = handoff(pgbouncer, relay, redis, "relay", "relay", "--topics", "payments:4");
      CliProcess consumeProcess = cli(pgbouncer, consumer, redis, "ledger", "consume", "--name", "prod-a");
      try {
        CliProcess pay = cli(pgbouncer, application, null, null, "pay", "--count", Integer.toString(PAYMENTS));
        assertThat(pay.waitFor(60)).as("pay; stderr: %s", pay.stderr()).isZero();
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
            .until(() -> charges() == PAYMENTS);
        relayProcess.process.destroy();
        consumeProcess.process.destroy();
        assertThat(relayProcess.waitFor(30)).as("relay; stderr: %s", relayProcess.stderr()).isZero();
        assertThat(consumeProcess.waitFor(30)).as("consume; stderr: %s", consumeProcess.stderr()).isZero();
      } finally {
        relayProcess.process.destroyForcibly();
        consumeProcess.process.destroyForcibly();
      }

      CliProcess status = handoff(pgbouncer, operator, redis, "operator", "status", "--topic", PaymentEvents.TOPIC);
      assertThat(status.waitFor(60)).as("status; stderr: %s", status.stderr()).isZero();
      assertThat(status.stdout())
          .contains("group ledger: backlog 0 (never delivered), pending 0 (delivered, not acknowledged), oldest"
              + " pending -, dead letters 0");

      assertThat(charges()).isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'ledger'"))
          .isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isZero();
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome ="
          + " 'processed'")).isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter")).isZero();
      LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), s, LedgerConsumer.DEFAULT_GROUP);
      assertThat(audit.passed()).as("audit %s", audit).isTrue();
      assertThat(audit.duplicated()).isZero();
      assertThat(audit.missing()).isZero();
      assertThat(relayProcess.stderr() + consumeProcess.stderr()).doesNotContain("ERROR")
          .doesNotContain("permission denied").doesNotContain("NOPERM");
      assertThat(pgbouncer.log()).doesNotContain("prepared statement");
      try (Jedis admin = redis.admin()) {
        // The one refusal: handoff status's SCAN for keys, which RedisAcl.operator leaves out (it would list every key
        // name of the server); status finds the shards in the relay's leases instead.
        assertThat(admin.aclLog()).extracting(e -> e.getUsername() + " " + e.getContext() + " " + e.getObject())
            .as("commands Redis refused").allMatch(r -> r.equals("operator toplevel scan"));
      }
    }
  }

  private long charges() {
    return env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
  }

  /** A sample command through PgBouncer as {@code role}, and over TLS as the Redis {@code user} when given. */
  private CliProcess cli(PgBouncerServer pgbouncer, DatabaseRole role, TlsRedis redis, String user,
      String... args) throws Exception {
    return CliProcess.start(withOptions(pgbouncer, role, redis, user, args));
  }

  /** The operator's {@code handoff <args>} the same way. */
  private CliProcess handoff(PgBouncerServer pgbouncer, DatabaseRole role, TlsRedis redis, String user,
      String... args) throws Exception {
    return CliProcess.handoff(withOptions(pgbouncer, role, redis, user, args));
  }

  private String[] withOptions(PgBouncerServer pgbouncer, DatabaseRole role, TlsRedis redis, String user,
      String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", pgbouncer.jdbcUrlAs(role.name()), "--schema", env.schema(),
        "--key-prefix", env.keyPrefix()));
    if (redis != null) {
      all.addAll(List.of("--redis-url", "rediss://" + user + ":" + user + "-secret@127.0.0.1:" + redis.port(),
          "--redis-ca", redis.certificates().caCertificate().toString()));
    }
    return all.toArray(String[]::new);
  }

  private static String[] rule(String user, String rule) {
    List<String> tokens = new ArrayList<>(List.of("reset", "on", ">" + user + "-secret"));
    tokens.addAll(List.of(rule.split(" ")));
    return tokens.toArray(String[]::new);
  }
}
