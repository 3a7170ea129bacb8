package dev.handoff.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/** Scripts run by SHA, and are sent whole once when Redis no longer knows them. */
@HandoffTest(migrate = false)
class LuaScriptTest {

  private static final String SOURCE = "return {KEYS[1], ARGV[1]}";

  private final TestEnvironment env;

  LuaScriptTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aScriptRedisForgotIsSentWholeOnceAndRunsBySha() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    LuaScript script = LuaScript.of("test", SOURCE);
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
        .digest(SOURCE.getBytes(StandardCharsets.UTF_8)));
    assertThat(known(server, sha)).as("unknown before the first run").isFalse();

    assertThat(script.runText(redis, List.of("k"), List.of("v"))).isEqualTo(List.of("k", "v"));
    assertThat(known(server, sha)).as("the fallback EVAL cached it").isTrue();

    redis.scriptFlush(); // what a restart without persistence does to scripts
    List<?> reply = (List<?>) script.run(redis, List.of(bytes("k2")), List.of(bytes("v2")));
    assertThat(reply).extracting(o -> new String((byte[]) o, StandardCharsets.UTF_8)).containsExactly("k2", "v2");
    assertThat(known(server, sha)).isTrue();
  }

  private static boolean known(RestartableRedis server, String sha) {
    try (Jedis jedis = new Jedis("127.0.0.1", server.port())) {
      return jedis.scriptExists(sha);
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
