package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.GroupStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisAccessControlException;

/**
 * Each component runs end to end under a Redis user that has exactly its {@link RedisAcl} rule and nothing else:
 * the relay, a started consumer (workers, lease renewal or heartbeat and reaper, close), and the operator's status,
 * dead-letter retry and inbox purge. Redis's own {@code ACL LOG} stays empty: not one command was refused, not even
 * one a client ignores (a connection name, a pool's PING).
 */
@HandoffTest
class RedisAclTest {

  private static final int MESSAGES = 20;
  private static final String POISON_KEY = "k7";

  private final TestEnvironment env;

  RedisAclTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void relayConsumerAndOperatorEachRunUnderTheirOwnRuleAlone(Transport transport) throws Exception {
    RestartableRedis server = env.privateRedis();
    String prefix = env.keyPrefix();
    String consumerRule = transport == Transport.LIST ? RedisAcl.listConsumer(prefix)
        : RedisAcl.streamConsumer(prefix);
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      admin.aclSetUser("relay", rule("relay-secret", RedisAcl.relay(prefix, transport)));
      admin.aclSetUser("consumer", rule("consumer-secret", consumerRule));
      admin.aclSetUser("operator", rule("operator-secret", RedisAcl.operator(prefix)));
      admin.aclLogReset();
    }
    String topic = "acl-" + transport.name().toLowerCase();
    String group = "g-" + transport.name().toLowerCase(); // the class's schema holds both runs' dead letters
    try (RedisClient admin = env.newRedisClient(server.uri())) {
      Fixture f = new Fixture(env, topic, admin, login(server, "consumer", "consumer-secret"));
      TransportSide.append(env, topic, MESSAGES, i -> "{\"n\":" + i + "}");

      RelayBuilder relay = Relay.builder(env.dataSource(), RedisConnectionSpec.of(login(server, "relay", "relay-secret"))).schema(env.schema()).keyPrefix(prefix)
          .topic(TopicConfig.of(topic));
      try (Relay r = (transport == Transport.LIST ? relay.listTransport(1_000) : relay).build()) {
        TransportSide.publishAll(env, r);
        r.maintainOnce(); // trim (streams) or the watermark (lists), under the relay's rule
      }
      String key = transport == Transport.LIST ? ListFormat.listKey(prefix, topic, 0) : f.streamKey();
      assertThat(transport == Transport.LIST ? admin.llen(key) : admin.xlen(key)).isEqualTo(MESSAGES);

      // The consumer, started: workers, renewals or heartbeats and the reaper, then its close. One poison
      // message is dead-lettered at its first failure, for the operator to retry.
      AtomicBoolean poisoned = new AtomicBoolean(true);
      MessageHandler effect = f.effect(group, null);
      MessageHandler handler = (tx, m) -> {
        if (poisoned.get() && POISON_KEY.equals(m.key())) {
          throw new IllegalStateException("poison");
        }
        effect.handle(tx, m);
      };
      try (HandoffConsumer consumer = transport == Transport.LIST
          ? TransportSide.listConsumer(env, f, group).handler(handler).maxDeliveries(1).build()
          : f.consumer(group).handler(handler).maxDeliveries(1).build()) {
        consumer.start();
        try {
          ConsumerTestKit.await("every message handled or dead-lettered", Duration.ofSeconds(20),
              () -> f.effectCount(group) == MESSAGES - 1 && consumer.deadLetters(10).size() == 1);
        } catch (AssertionError e) {
          throw new AssertionError(e.getMessage() + ": effects " + f.effectCount(group) + ", dead letters "
              + consumer.deadLetters(10) + ", refusals " + refusals(server), e);
        }
      }
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES - 1);

      // The operator: status, dead-letter retry and the inbox purge, on a consumer that is never started.
      poisoned.set(false);
      URI operator = login(server, "operator", "operator-secret");
      try (HandoffConsumer probe = transport == Transport.LIST
          ? ListConsumer.builder(env.dataSource(), RedisConnectionSpec.of(operator)).schema(env.schema()).keyPrefix(prefix).topic(topic)
              .group(group).handler(handler).build()
          : StreamConsumer.builder(env.dataSource(), RedisConnectionSpec.of(operator)).schema(env.schema()).keyPrefix(prefix).topic(topic)
              .group(group).handler(handler).build()) {
        GroupStatus before = probe.status();
        assertThat(before.deadLetters()).isEqualTo(1);
        assertThat(before.drained()).isTrue();
        if (before instanceof ConsumerStatus s) {
          assertThat(s.backlog()).isZero();
          assertThat(s.pending()).isZero();
          assertThat(s.streams().get(0).length()).isEqualTo(MESSAGES);
        } else {
          ListStatus s = (ListStatus) before;
          assertThat(s.waiting()).isZero();
          assertThat(s.inProcessing()).isZero();
        }
        long deadLetterId = probe.deadLetters(10).get(0).id();
        assertThat(probe.retry(deadLetterId)).isTrue();
        assertThat(probe.status().deadLetters()).isZero();
        InboxPurgeResult purge = probe.purgeInbox(); // nothing is past the dedup window: all kept, none deleted
        assertThat(purge.deleted()).isZero();
      }
      assertThat(f.effectCount(group)).isEqualTo(MESSAGES);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(refusals(server)).as("commands Redis refused").isEmpty();

      // The operator's `handoff status`: topics found from the relay's leases, since its rule has no SCAN (which
      // would list every key name of the server); the one refusal is that SCAN.
      try (TopicInspector inspector = TopicInspector.builder(env.dataSource(),
          RedisConnectionSpec.builder(operator.toString()).build()).schema(env.schema()).keyPrefix(prefix).build()) {
        assertThat(inspector.topics()).contains(topic);
        assertThat(inspector.status(topic, group).shards()).hasSize(1);
      }
      assertThat(refusals(server)).as("only SCAN refused").isNotEmpty()
          .allMatch(r -> r.equals("operator toplevel command scan"));
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aRefusedAcknowledgementNamesTheCommandAndThePermission(Transport transport) throws Exception {
    RestartableRedis server = env.privateRedis();
    String prefix = env.keyPrefix();
    String topic = "acl-refused-" + transport.name().toLowerCase();
    String group = "refused-" + transport.name().toLowerCase();
    // Streams acknowledge with XACK, sent directly; lists with LREM inside the list-ack script.
    String rule = transport == Transport.LIST ? RedisAcl.listConsumer(prefix) + " -lrem"
        : RedisAcl.streamConsumer(prefix) + " -xack";
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      admin.aclSetUser("consumer", rule("consumer-secret", rule));
    }
    try (RedisClient admin = env.newRedisClient(server.uri())) {
      Fixture f = new Fixture(env, topic, admin, login(server, "consumer", "consumer-secret"));
      TransportSide.append(env, topic, 3, i -> "{\"n\":" + i + "}");
      RelayBuilder relay = Relay.builder(env.dataSource(), env.specOf(admin)).schema(env.schema()).keyPrefix(prefix)
          .topic(TopicConfig.of(topic));
      try (Relay r = (transport == Transport.LIST ? relay.listTransport(1_000) : relay).build()) {
        TransportSide.publishAll(env, r);
      }
      String key = transport == Transport.LIST ? ListFormat.listKey(prefix, topic, 0) : f.streamKey();
      try (TransportSide consumer = transport == Transport.LIST
          ? TransportSide.of(TransportSide.listConsumer(env, f, group).handler(f.effect(group, null)).build())
          : TransportSide.of(f.consumer(group).build())) {
        Throwable refused = catchThrowable(consumer::pollOnce);
        assertThat(refused).isInstanceOf(JedisAccessControlException.class);
        if (transport == Transport.LIST) {
          assertThat(refused.getMessage()).contains("Redis ACL refused the command LREM (line 3 of script"
              + " 'list-ack')", "the Redis user needs +lrem").doesNotContainPattern("[0-9a-f]{40}");
        } else {
          assertThat(refused.getMessage()).contains("Redis ACL refused XACK on [" + key + "]: the Redis user needs"
              + " +xack");
        }
      }
      // The effects committed before the acknowledgement was refused; the inbox keeps a redelivery harmless.
      assertThat(f.effectCount(group)).isEqualTo(3);
      assertThat(f.inboxCount(group)).isEqualTo(3);

      // Granted, a consumer finishes them (reclaimed after minIdle, or released to the list when the first closed):
      // acknowledged as duplicates, no second effect.
      try (Jedis a = new Jedis("127.0.0.1", server.port())) {
        a.aclSetUser("consumer", transport == Transport.LIST ? "+lrem" : "+xack");
      }
      try (HandoffConsumer again = transport == Transport.LIST
          ? TransportSide.listConsumer(env, f, group).handler(f.effect(group, null)).build()
          : f.consumer(group).build()) {
        again.start();
        ConsumerTestKit.await("every entry acknowledged", Duration.ofSeconds(20), () -> transport == Transport.LIST
            ? admin.llen(key) == 0 && admin.keys(key + ":processing:*").stream()
                .filter(k -> !k.endsWith(":alive")).allMatch(k -> admin.llen(k) == 0)
            : f.pendingTotal(group) == 0);
      }
      assertThat(f.effectCount(group)).isEqualTo(3);
      assertThat(f.doubleEffects(group)).isZero();
    }
  }

  /** {@code on}, the password, then the rule's tokens: what {@code ACL SETUSER <user>} takes. */
  static String[] rule(String password, String rule) {
    List<String> tokens = new ArrayList<>(List.of("reset", "on", ">" + password));
    tokens.addAll(List.of(rule.split(" ")));
    return tokens.toArray(String[]::new);
  }

  static URI login(RestartableRedis server, String user, String password) {
    return URI.create("redis://" + user + ":" + password + "@127.0.0.1:" + server.port());
  }

  /** What {@code ACL LOG} recorded: user, context and the refused command or key, one line each. */
  static List<String> refusals(RestartableRedis server) {
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      return admin.aclLog().stream()
          .map(e -> e.getUsername() + " " + e.getContext() + " " + e.getReason() + " " + e.getObject()).toList();
    }
  }
}
