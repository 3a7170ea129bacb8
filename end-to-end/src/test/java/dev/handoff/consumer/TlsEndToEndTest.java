package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestCertificates;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testing.TlsRedis;
import dev.handoff.testkit.ConsumerTestKit;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * Relay and stream consumer against a Redis that speaks TLS only, both configured from one
 * {@link RedisConnectionSpec}: with the server's certificate checked against a CA file, and with mutual TLS; and a
 * list consumer the same way.
 */
@HandoffTest
class TlsEndToEndTest {

  private static final int MESSAGES = 300;
  private static final String PASSWORD = "tls+secret";

  @TempDir
  static Path dir;

  private static TestCertificates certs;
  private static TlsRedis server;
  private static TlsRedis mutual;

  private final TestEnvironment env;

  TlsEndToEndTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeAll
  static void startServers() {
    certs = TestCertificates.generate(dir, "ip:127.0.0.1,dns:localhost");
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

  @ParameterizedTest(name = "mutual TLS: {0}")
  @ValueSource(booleans = {false, true})
  void everyMessageIsRelayedAndHandledOnceOverTls(boolean mutualTls) throws Exception {
    TlsRedis target = mutualTls ? mutual : server;
    RedisConnectionSpec.Builder b = RedisConnectionSpec.builder("rediss://:tls%2Bsecret@127.0.0.1:" + target.port())
        .caFile(certs.caCertificate())
        .socketTimeout(Duration.ofSeconds(5));
    if (mutualTls) {
      b.clientCertificate(certs.clientCertificate(), certs.clientKey());
    }
    RedisConnectionSpec spec = b.build();
    String topic = mutualTls ? "tls-mutual" : "tls-server";
    String group = "ledger-" + topic; // the inbox table is shared by both runs

    try (RedisClient redis = RedisClient.builder().hostAndPort(spec.hostAndPort())
        .clientConfig(DefaultJedisClientConfig.builder().from(spec.clientConfig()).resp2().build()).build()) {
      Fixture f = new Fixture(env, topic, redis, target.uri());
      TransportSide.append(env, topic, MESSAGES, i -> "{\"n\":" + i + "}");
      try (Relay relay = Relay.builder(env.dataSource(), spec).schema(env.schema()).keyPrefix(env.keyPrefix())
              .topic(TopicConfig.of(topic)).build();
          StreamConsumer consumer = StreamConsumer.builder(env.dataSource(), spec)
              .schema(env.schema())
              .keyPrefix(env.keyPrefix())
              .topic(topic)
              .group(group)
              .handler(f.effect(group, null))
              .block(Duration.ofMillis(100))
              .build()) {
        relay.start();
        consumer.start();
        ConsumerTestKit.await(MESSAGES + " effects", Duration.ofSeconds(60),
            () -> f.effectCount(group) == MESSAGES && f.pendingTotal(group) == 0);
      }
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isZero();
      // entries-added, not XLEN: the relay's retention may already have trimmed what the group finished
      assertThat(redis.xinfoStream(f.streamKey()).getStreamInfo().get("entries-added")).isEqualTo((long) MESSAGES);
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group)).isEqualTo(MESSAGES);
      assertThat(f.pendingTotal(group)).isZero();
    }
  }

  @Test
  void aListConsumerBuiltFromASpecHandlesEveryMessageOverMutualTls() throws Exception {
    RedisConnectionSpec spec = RedisConnectionSpec.builder("rediss://:tls%2Bsecret@127.0.0.1:" + mutual.port())
        .caFile(certs.caCertificate())
        .clientCertificate(certs.clientCertificate(), certs.clientKey())
        .build();
    String topic = "tls-list";
    String group = "ledger-" + topic;
    try (RedisClient redis = RedisClient.builder().hostAndPort(spec.hostAndPort())
        .clientConfig(DefaultJedisClientConfig.builder().from(spec.clientConfig()).resp2().build()).build()) {
      Fixture f = new Fixture(env, topic, redis, mutual.uri());
      TransportSide.append(env, topic, MESSAGES, i -> "{\"n\":" + i + "}");
      ListStatus status;
      try (Relay relay = Relay.builder(env.dataSource(), spec).schema(env.schema()).keyPrefix(env.keyPrefix())
              .topic(TopicConfig.of(topic)).listTransport(MESSAGES).build();
          ListConsumer consumer = ListConsumer.builder(env.dataSource(), spec)
              .schema(env.schema())
              .keyPrefix(env.keyPrefix())
              .topic(topic)
              .group(group)
              .handler(f.effect(group, null))
              .block(Duration.ofMillis(100))
              .build()) {
        relay.start();
        consumer.start();
        ConsumerTestKit.await(MESSAGES + " effects", Duration.ofSeconds(60),
            () -> f.effectCount(group) == MESSAGES);
        status = ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(30));
      }
      assertThat(status.waiting()).isZero();
      assertThat(status.inProcessing()).isZero();
      assertThat(status.outboxBacklog()).isZero();
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group)).isEqualTo(MESSAGES);
    }
  }

  /** docs/operations.md's example of a RedisConnectionSpec, line for line (DocExamplesTest checks it). */
  @Test
  void theOperationsPageExampleConnectsTheConsumerAndTheRelayOverMutualTls() throws Exception {
    DataSource dataSource = env.dataSource();
    String redisUrl = "rediss://:tls%2Bsecret@127.0.0.1:" + mutual.port();
    String caFile = certs.caCertificate().toString();
    String certFile = certs.clientCertificate().toString();
    String keyFile = certs.clientKey().toString();
    DocLedger ledger = new DocLedger(dataSource, env.schema());
    List<UUID> ids = ledger.pay(TopicConfig.of("payments"), 10);

    RedisConnectionSpec redis = RedisConnectionSpec.builder(redisUrl)   // "rediss://app:secret@cache.internal:6380"
        .caFile(Path.of(caFile))                                      // "/etc/handoff/redis-ca.pem"
        .clientCertificate(Path.of(certFile), Path.of(keyFile))       // "/etc/handoff/app.pem", "/etc/handoff/app.key"
        .build();
    StreamConsumer consumer = StreamConsumer.builder(dataSource, redis).topic("payments").group("ledger")
        .schema(env.schema()).keyPrefix(env.keyPrefix())              // the test's own
        .handler((tx, message) -> ledger.charge(tx, message))
        .build();
    Relay relay = Relay.builder(dataSource, redis).topic("payments")
        .schema(env.schema()).keyPrefix(env.keyPrefix())              // the test's own
        .build();

    try (consumer; relay) {
      assertThat(redis.url().tls()).isTrue();
      relay.start();
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(30));
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(30));
    }
    assertThat(ledger.charges("payments")).isEqualTo(10);
    assertThat(ledger.doubleCharges("payments")).isZero();
  }
}
