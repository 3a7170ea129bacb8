package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.Map;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XTrimParams;

/**
 * What the relay's deletion trigger relies on, on the real Redis 7: XINFO STREAM's {@code max-deleted-entry-id} is
 * the highest ID XDEL ever deleted, XTRIM leaves it as it was, and an XDEL below it does not change it (which is why
 * the relay's check misses that case and {@code handoff repair} does not).
 */
@HandoffTest
class DeletedEntryIdProbeTest {

  private final TestEnvironment env;

  DeletedEntryIdProbeTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void xdelRaisesMaxDeletedEntryIdAndXtrimLeavesIt() {
    String key = env.keyPrefix() + ":{probe:0}";
    for (int i = 1; i <= 10; i++) {
      env.redis().xadd(key, XAddParams.xAddParams().id(new StreamEntryID(i, 0)), Map.of("f", "v"));
    }
    assertThat(maxDeleted(key)).isEqualTo("0-0");
    env.redis().xdel(key, new StreamEntryID(5, 0));
    assertThat(maxDeleted(key)).isEqualTo("5-0");
    assertThat(env.redis().xtrim(key, XTrimParams.xTrimParams().minId("3-0"))).isEqualTo(2);
    assertThat(maxDeleted(key)).as("XTRIM MINID does not count as a deletion").isEqualTo("5-0");
    env.redis().xdel(key, new StreamEntryID(4, 0));
    assertThat(maxDeleted(key)).as("an XDEL below the highest deleted ID leaves it").isEqualTo("5-0");
    env.redis().xdel(key, new StreamEntryID(8, 0));
    assertThat(maxDeleted(key)).isEqualTo("8-0");
    assertThat(env.redis().xtrim(key, XTrimParams.xTrimParams().minId("10-0"))).isEqualTo(4);
    assertThat(maxDeleted(key)).isEqualTo("8-0");
    env.redis().del(key);
  }

  private String maxDeleted(String key) {
    return String.valueOf(env.redis().xinfoStream(key).getStreamInfo().get("max-deleted-entry-id"));
  }
}
