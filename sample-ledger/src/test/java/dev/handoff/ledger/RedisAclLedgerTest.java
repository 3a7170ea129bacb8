package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/**
 * The sample ledger under the Redis users of docs/operations.md: the relay and the ledger consumer each with its own
 * {@link RedisAcl} rule, and the operator's {@code handoff status} and {@code dlq} with the operator's. Nothing is
 * refused ({@code ACL LOG} holds only status's SCAN, which the operator's rule leaves out by design), and the numbers
 * are exact.
 */
@HandoffTest
class RedisAclLedgerTest {

  private static final int PAYMENTS = 40;
  private static final int POISON = 4;

  private final TestEnvironment env;

  RedisAclLedgerTest(TestEnvironment env) {
    this.env = env;
    LedgerMigrations.migrate(env.dataSource(), env.schema());
  }

  @Test
  void relayConsumerStatusAndDeadLettersEachRunUnderTheirOwnRedisUser() {
    RestartableRedis server = env.privateRedis();
    String prefix = env.keyPrefix();
    try (Jedis admin = admin(server)) {
      admin.aclSetUser("relay", rule("relay", RedisAcl.relay(prefix)));
      admin.aclSetUser("ledger", rule("ledger", RedisAcl.streamConsumer(prefix)));
      admin.aclSetUser("operator", rule("operator", RedisAcl.operator(prefix)));
      admin.aclLogReset();
    }
    // The producer needs no Redis at all.
    Run pay = cli(server.uri().toString(), "pay", "--count", Integer.toString(PAYMENTS), "--poison-every",
        Integer.toString(PAYMENTS / POISON));
    assertThat(pay.exit()).as(pay.err()).isZero();

    try (Relay relay = Relay.builder(env.dataSource(), login(server, "relay")).schema(env.schema()).keyPrefix(prefix)
            .topic(PaymentEvents.TOPIC_CONFIG).build()) {
      ConsumerTestKit.await("every payment published", Duration.ofSeconds(20), () -> {
        relay.relayOnce();
        return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0;
      });
      relay.maintainOnce();
    }

    LedgerConsumer ledger = LedgerConsumer.of(StreamConsumer.builder(env.dataSource(), login(server, "ledger"))
        .schema(env.schema())
        .keyPrefix(prefix)
        .topic(PaymentEvents.TOPIC_CONFIG)
        .group(LedgerConsumer.DEFAULT_GROUP)
        .workers(1)
        .block(Duration.ofMillis(50))
        .minIdle(Duration.ofMillis(600))
        .reclaimInterval(Duration.ofMillis(50))
        .maxDeliveries(2)
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100)), env.dataSource(), false, null);
    try {
      ConsumerTestKit.await("every payment charged or dead-lettered", Duration.ofSeconds(30), () -> {
        ledger.consumer().pollOnce();
        return ledger.deadLetters(100).size() == POISON
            && env.queryLong("SELECT count(*) FROM " + env.schema() + ".charge") == PAYMENTS - POISON;
      });

      String operator = "redis://operator:operator-secret@127.0.0.1:" + server.port();
      Run status = handoff("status", "--redis-url", operator, "--key-prefix", prefix, "--topic", PaymentEvents.TOPIC);
      assertThat(status.exit()).as(status.err()).isZero();
      assertThat(status.out()).contains("group ledger: backlog 0 (never delivered), pending 0 (delivered, not"
          + " acknowledged), oldest pending -, dead letters " + POISON);
      Run json = handoff("status", "--redis-url", operator, "--key-prefix", prefix, "--topic", PaymentEvents.TOPIC,
          "--json");
      assertThat(json.exit()).as(json.err()).isZero();
      // dlq needs no Redis: the dead letters and the retry requests are in the database
      Run list = handoff("dlq", "list", "--group", "ledger");
      assertThat(list.exit()).as(list.err()).isZero();
      assertThat(list.out().lines().filter(l -> l.matches("\\d+ +ledger +dead .*"))).hasSize(POISON);
      assertThat(list.out()).contains(POISON + " dead letters of group ledger: " + POISON + " dead");
      Run retry = handoff("dlq", "retry", "--group", "ledger", "--all");
      assertThat(retry.exit()).as(retry.err()).isZero();
      assertThat(retry.out()).contains("requested retry of " + POISON + " dead letters of group ledger");
      // the ledger carries the requests out under its own Redis user: still poison, each fails again
      assertThat(ledger.consumer().maintainOnce()).isEqualTo(POISON);
      assertThat(handoff("dlq", "list", "--group", "ledger").out())
          .contains(POISON + " dead letters of group ledger: " + POISON + " retry-failed");
    } finally {
      ledger.close();
    }

    try (Jedis admin = admin(server)) {
      // The one refusal: handoff status's SCAN for keys, which RedisAcl.operator leaves out (it would list every key
      // name of the server); status finds the shards in the relay's leases instead.
      assertThat(admin.aclLog()).extracting(e -> e.getUsername() + " " + e.getContext() + " " + e.getObject())
          .as("commands Redis refused").allMatch(r -> r.equals("operator toplevel scan"));
    }
  }

  private record Run(int exit, String out, String err) {}

  /** The operator's {@code handoff <args>} on this class's schema. */
  private Run handoff(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--schema", env.schema()));
    LedgerTestSupport.Run run = LedgerTestSupport.handoffAs(all.toArray(String[]::new));
    return new Run(run.exit(), run.out(), run.err());
  }

  private Run cli(String redisUrl, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", redisUrl, "--schema", env.schema(),
        "--key-prefix", env.keyPrefix()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = LedgerCli.execute(new PrintWriter(out), new PrintWriter(err), all.toArray(String[]::new));
    return new Run(exit, out.toString(), err.toString());
  }

  private static String[] rule(String user, String rule) {
    List<String> tokens = new ArrayList<>(List.of("reset", "on", ">" + user + "-secret"));
    tokens.addAll(List.of(rule.split(" ")));
    return tokens.toArray(String[]::new);
  }

  /** The server, logged in as {@code user}. */
  private static RedisConnectionSpec login(RestartableRedis server, String user) {
    return RedisConnectionSpec.of("redis://" + user + ":" + user + "-secret@127.0.0.1:" + server.port());
  }

  private static Jedis admin(RestartableRedis server) {
    return new Jedis("127.0.0.1", server.port());
  }
}
