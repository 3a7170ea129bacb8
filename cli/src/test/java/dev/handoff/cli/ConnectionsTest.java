package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/** The command-line tools read Redis URLs with {@link dev.handoff.core.RedisUrl} and never show a password. */
@HandoffTest(migrate = false)
class ConnectionsTest {

  private final TestEnvironment env;

  ConnectionsTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void maskHidesThePasswordOfEveryLoginForm() {
    assertThat(Connections.mask("redis://app:hunter2@cache:6379/1")).isEqualTo("redis://app:***@cache:6379/1");
    assertThat(Connections.mask("redis://:hunter2@cache")).isEqualTo("redis://:***@cache");
    assertThat(Connections.mask("redis://hunter2@cache/2")).isEqualTo("redis://***@cache/2");
    assertThat(Connections.mask("rediss://hunter2@cache")).isEqualTo("rediss://***@cache");
    assertThat(Connections.mask("redis://:hun@ter2@cache")).isEqualTo("redis://:***@cache");
    assertThat(Connections.mask("redis://hun@ter2@cache")).isEqualTo("redis://***@cache");
    assertThat(Connections.mask("cannot connect to Redis at redis://hunter2@127.0.0.1:1: Connection refused"))
        .isEqualTo("cannot connect to Redis at redis://***@127.0.0.1:1: Connection refused");
    assertThat(Connections.mask("jdbc:postgresql://db/app?user=u&password=hunter2"))
        .isEqualTo("jdbc:postgresql://db/app?user=u&password=***");
    assertThat(Connections.mask("redis://cache:6379")).isEqualTo("redis://cache:6379");
  }

  @Test
  void aUrlWithUserPasswordAndDatabaseLogsInAndSelectsTheDatabase() {
    RestartableRedis server = env.privateRedis();
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      admin.aclSetUser("app", "on", ">pa+ss@1", "~*", "&*", "+@all");
      admin.configSet("requirepass", "not-this-one");
    }
    // A raw '+' is a '+', not a space as URLDecoder would have it.
    try (RedisClient redis = Connections.redis("redis://app:pa+ss%401@127.0.0.1:" + server.port() + "/3", 2);
        RedisClient db3 = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", server.port()))
            .clientConfig(DefaultJedisClientConfig.builder().user("app").password("pa+ss@1").database(3).build())
            .build()) {
      redis.set("cli-key", "v");
      assertThat(db3.get("cli-key")).isEqualTo("v");
    }
  }

  @Test
  void aBadRedisUrlIsOneLineThatNamesTheProblemWithoutThePassword() {
    assertThatThrownBy(() -> Connections.redis("http://:hunter2@cache", 1))
        .isInstanceOf(Connections.UnreachableException.class)
        .hasMessageStartingWith("the Redis URL must look like redis://").hasMessageContaining("'http://:***@cache'");
    assertThatThrownBy(() -> Connections.redis("redis://hunter2@cache/db", 1))
        .isInstanceOf(Connections.UnreachableException.class)
        .hasMessage("the Redis URL's database must be a number, was 'db'");
    assertThatThrownBy(() -> Connections.redis("redis://hunter2@127.0.0.1:1", 1, java.time.Duration.ZERO))
        .isInstanceOf(Connections.UnreachableException.class)
        .hasMessageStartingWith("cannot connect to Redis at redis://***@127.0.0.1:1: ")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("hunter2").doesNotContain("\n"));
  }
}
