package dev.handoff.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * What Redis 7.0 answers when its ACL refuses a script, a command inside it or a key, and what handoff makes of it:
 * the command and the permission by name, never only the script's SHA. Each case on a real server.
 */
@HandoffTest(migrate = false)
class AclErrorsTest {

  private static final String SHA = "[0-9a-f]{40}";

  private final TestEnvironment env;
  private RestartableRedis server;

  AclErrorsTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void server() {
    server = env.privateRedis();
  }

  @Test
  void aCommandRefusedInsideAScriptIsNamedByItsLine() {
    String source = "local a = redis.call('HSET', KEYS[1], 'f', 1)\n"
        + "local b = redis.call('HGET', KEYS[1], 'f')\nreturn b";
    LuaScript script = LuaScript.of("probe", source);
    try (RedisClient redis = user("+evalsha +eval +hset")) {
      Throwable raw = catchThrowable(() -> redis.eval(source, List.of("h:{t:0}"), List.of()));
      assertThat(raw.getMessage()).as("what Redis 7.0 says")
          .startsWith("ERR The user executing the script can't run this command or subcommand script: ")
          .containsPattern(SHA).endsWith("on @user_script:2.");

      Throwable e = catchThrowable(() -> script.runText(redis, List.of("h:{t:0}"), List.of()));
      assertThat(e).isInstanceOf(JedisAccessControlException.class).hasCauseInstanceOf(JedisDataException.class);
      assertThat(e.getCause()).hasMessage(raw.getMessage());
      assertThat(e.getMessage()).isEqualTo("Redis ACL refused the command HGET (line 2 of script 'probe') on keys"
          + " [h:{t:0}]: the Redis user needs +hget; the script calls HGET, HSET (see RedisAcl)");
    }
  }

  @Test
  void aRefusalCaughtByPcallAndReturnedHasNoLineSoEveryCommandIsListed() {
    LuaScript script = LuaScript.of("probe", "local r = redis.pcall('XADD', KEYS[1], '*', 'f', 1)\n"
        + "if type(r) == 'table' and r.err then return redis.error_reply(r.err) end\n"
        + "return redis.call('XLEN', KEYS[1])");
    Throwable e = runAs(user("+evalsha +eval +xlen"), script);
    assertThat(e).isInstanceOf(JedisAccessControlException.class);
    assertThat(e.getMessage()).isEqualTo("Redis ACL refused one of the commands of script 'probe' on keys [h:{t:0}]:"
        + " it calls XADD, XLEN, so the Redis user needs +xadd +xlen (see RedisAcl)");
  }

  @Test
  void evalshaRefusedAndKeysRefusedAreNamedToo() {
    LuaScript script = LuaScript.of("probe", "return redis.call('XLEN', KEYS[1])");
    Throwable noEval = runAs(user("+xlen"), script);
    assertThat(noEval.getMessage()).startsWith("Redis ACL refused EVALSHA, which runs script 'probe' on keys"
        + " [h:{t:0}]: the Redis user needs +evalsha +eval").doesNotContainPattern(SHA);

    Throwable declaredKey = runAs(user("+evalsha +eval +xlen", "~other:*"), script);
    assertThat(declaredKey.getMessage()).startsWith("Redis ACL refused script 'probe' access to its keys [h:{t:0}]:"
        + " the Redis user's key patterns must cover them");

    LuaScript undeclared = LuaScript.of("probe", "return redis.call('XLEN', 'elsewhere')");
    Throwable inScript = runAs(user("+evalsha +eval +xlen"), undeclared);
    assertThat(inScript.getMessage()).startsWith("Redis ACL refused the command XLEN (line 1 of script 'probe')"
        + " access to a key beside [h:{t:0}]").doesNotContainPattern(SHA);
  }

  @Test
  void anErrorThatIsNotARefusalIsLeftAlone() {
    LuaScript script = LuaScript.of("probe", "return redis.call('HGET', KEYS[1], 'f')");
    try (RedisClient admin = env.newRedisClient(server.uri())) {
      admin.set("h:{t:0}", "a string");
      Throwable e = catchThrowable(() -> script.runText(admin, List.of("h:{t:0}"), List.of()));
      assertThat(e).isExactlyInstanceOf(JedisDataException.class).hasMessageContaining("WRONGTYPE");
    }
  }

  @Test
  void aDirectCommandRefusedIsNamedWithItsPermission() {
    try (RedisClient redis = user("+get")) {
      Throwable e = catchThrowable(() -> AclErrors.call("HGET", List.of("h:{t:0}"), () -> redis.hget("h:{t:0}", "f")));
      assertThat(e).isInstanceOf(JedisAccessControlException.class)
          .hasMessage("Redis ACL refused HGET on [h:{t:0}]: the Redis user needs +hget (see RedisAcl)");
      Throwable key = catchThrowable(() -> AclErrors.call("GET", List.of("other"), () -> redis.get("other")));
      assertThat(key).hasMessage("Redis ACL refused GET access to [other]: the Redis user's key patterns must cover"
          + " them (RedisAcl: ~<keyPrefix>:{*) (see RedisAcl)");
    }
  }

  private Throwable runAs(RedisClient redis, LuaScript script) {
    try (redis) {
      return catchThrowable(() -> script.runText(redis, List.of("h:{t:0}"), List.of()));
    }
  }

  private RedisClient user(String commands) {
    return user(commands, "~h:{*");
  }

  private RedisClient user(String commands, String keys) {
    try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
      List<String> rule = new ArrayList<>(List.of("reset", "on", ">pw", keys, "-@all"));
      rule.addAll(List.of(commands.split(" ")));
      admin.aclSetUser("probe", rule.toArray(String[]::new));
    }
    return RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", server.port()))
        .clientConfig(DefaultJedisClientConfig.builder().resp2().user("probe").password("pw").build()).build();
  }
}
