package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.net.URI;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * A consumer built from a Redis URL logs in and uses the URL's database on a real server that refuses anonymous
 * clients: {@code builder(dataSource, URI)} once kept only the host and port.
 */
@HandoffTest
class RedisUrlLoginTest {

  /** Has {@code @}, {@code +} and {@code %} in it: the URL must percent-decode it and leave the {@code +} alone. */
  private static final String APP_PASSWORD = "p@ss+w%rd";
  private static final String DEFAULT_PASSWORD = "default+secret";
  private static final int MESSAGES = 3;

  private final TestEnvironment env;

  RedisUrlLoginTest(TestEnvironment env) {
    this.env = env;
  }

  static Stream<Arguments> transportsAndLogins() {
    return Stream.of(
        Arguments.of(Transport.STREAM, "user:password", "app:p%40ss+w%25rd@", "app", APP_PASSWORD),
        Arguments.of(Transport.LIST, "user:password", "app:p%40ss+w%25rd@", "app", APP_PASSWORD),
        Arguments.of(Transport.STREAM, "password alone", "default+secret@", null, DEFAULT_PASSWORD),
        Arguments.of(Transport.LIST, "password alone", ":default+secret@", null, DEFAULT_PASSWORD));
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("transportsAndLogins")
  void consumerBuiltFromAUrlLogsInUsesItsDatabaseAndHandlesEveryMessage(Transport transport, String form,
      String userInfo, String user, String password) throws Exception {
    RestartableRedis server = env.privateRedis();
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      admin.aclSetUser("app", "on", ">" + APP_PASSWORD, "~*", "&*", "+@all");
      // From here on a client that does not log in gets NOAUTH for every command.
      admin.configSet("requirepass", DEFAULT_PASSWORD);
    }
    URI url = URI.create("redis://" + userInfo + "127.0.0.1:" + server.port() + "/3");
    String topic = "login-" + transport.name().toLowerCase() + "-" + (user == null ? "pw" : "user");
    try (RedisClient db3 = client(server, user, password, 3);
        RedisClient db0 = client(server, user, password, 0)) {
      Fixture f = new Fixture(env, topic, db3, url);
      TransportSide.append(env, topic, MESSAGES, i -> "{\"n\":" + i + "}");
      RelayBuilder relay = Relay.builder(env.dataSource(), RedisConnectionSpec.of(url)).schema(env.schema()).keyPrefix(env.keyPrefix())
          .topic(TopicConfig.of(topic));
      try (Relay r = (transport == Transport.LIST ? relay.listTransport(100) : relay).build()) {
        TransportSide.publishAll(env, r);
      }
      String key = transport == Transport.LIST ? ListFormat.listKey(env.keyPrefix(), topic, 0) : f.streamKey();
      assertThat(db3.exists(key)).as("the relay wrote to db 3").isTrue();

      PollResult total = PollResult.EMPTY;
      try (TransportSide consumer = transport == Transport.LIST
          ? TransportSide.of(TransportSide.listConsumer(env, f, "g").handler(f.effect("g", null)).build())
          : TransportSide.of(f.consumer("g").build())) {
        for (int i = 0; i < 100; i++) {
          PollResult r = consumer.pollOnce();
          if (r.isEmpty()) {
            break;
          }
          total = total.plus(r);
        }
        // The consumer's own keys are in db 3 beside the relay's (a list consumer's registration goes when it
        // closes), and nothing of this class is in db 0.
        if (transport == Transport.STREAM) {
          assertThat(db3.xinfoGroups(key)).extracting(g -> g.getName()).containsExactly("g");
        } else {
          assertThat(db3.exists(ListFormat.consumersKey(key))).isTrue();
        }
        assertThat(db0.keys(env.keyPrefix() + "*")).isEmpty();
      }

      assertThat(total.handled()).isEqualTo(MESSAGES);
      assertThat(total.duplicates()).isZero();
      assertThat(f.effectCount("g")).isEqualTo(MESSAGES);
    }
  }

  private static RedisClient client(RestartableRedis server, String user, String password, int database) {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder().resp2().password(password)
        .database(database);
    if (user != null) {
      config.user(user);
    }
    return RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", server.port()))
        .clientConfig(config.build()).build();
  }
}
