package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.internal.ListScripts;
import dev.handoff.core.internal.LuaScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rules {@link RedisAcl} gives: their exact text for the default prefix (which docs/operations.md shows, so the
 * two cannot drift), the key pattern that follows the prefix, and that every command the relay's scripts call is
 * granted. That they are enough end to end is RelayAclTest's and the consumer module's RedisAclTest's job.
 */
class RedisAclRulesTest {

  static final String RELAY_STREAMS = "resetkeys ~handoff:{* resetchannels -@all +client|setname +cluster|slots +eval +evalsha"
      + " +exists +hget +hset +ping +xack +xadd +xinfo|groups +xinfo|stream +xlen +xpending +xrange +xtrim";
  static final String RELAY_LISTS = "resetkeys ~handoff:{* resetchannels -@all +client|setname +cluster|slots +del +eval +evalsha"
      + " +hget +hkeys +hmget +hset +llen +lrange +ping +rpush";
  static final String STREAM_CONSUMER = "resetkeys ~handoff:{* resetchannels -@all +client|setname +cluster|slots +eval +evalsha"
      + " +exists +ping +xack +xautoclaim +xclaim +xgroup|create +xgroup|delconsumer +xinfo|stream +xpending +xrange +xreadgroup";
  static final String LIST_CONSUMER = "resetkeys ~handoff:{* resetchannels -@all +blmove +client|setname +cluster|slots +del +eval"
      + " +evalsha +exists +hdel +hget +hgetall +hincrby +hkeys +hset +llen +lmove +lpos +lrange +lrem +ping +set +time";
  static final String OPERATOR = "resetkeys ~handoff:{* resetchannels -@all +client|setname +cluster|slots +eval +evalsha +exists"
      + " +hget +hkeys +hmget +llen +lrange +ping +type +xinfo|groups +xinfo|stream +xlen +xpending +xrange +xrevrange";
  private static final String STREAM_ADMIN = "resetkeys ~handoff:{* resetchannels -@all +client|setname +cluster|slots +eval"
      + " +evalsha +exists +ping +xgroup|setid +xinfo|groups +xinfo|stream +xlen +xpending +xrange +xtrim";

  @Test
  void rulesForTheDefaultPrefixAreExactlyTheseAndTheOperationsGuideShowsEach() throws Exception {
    String prefix = StreamFormat.DEFAULT_KEY_PREFIX;
    assertThat(RedisAcl.relay(prefix)).isEqualTo(RELAY_STREAMS).isEqualTo(RedisAcl.relay(prefix, Transport.STREAM));
    assertThat(RedisAcl.relay(prefix, Transport.LIST)).isEqualTo(RELAY_LISTS);
    assertThat(RedisAcl.streamConsumer(prefix)).isEqualTo(STREAM_CONSUMER);
    assertThat(RedisAcl.listConsumer(prefix)).isEqualTo(LIST_CONSUMER);
    assertThat(RedisAcl.operator(prefix)).isEqualTo(OPERATOR);
    assertThat(RedisAcl.streamAdmin(prefix)).isEqualTo(STREAM_ADMIN);
    String guide = Files.readString(Path.of("..", "docs", "operations.md"));
    for (String rule : List.of(RELAY_STREAMS, RELAY_LISTS, STREAM_CONSUMER, LIST_CONSUMER, OPERATOR,
        STREAM_ADMIN)) {
      assertThat(guide).contains(rule);
    }
  }

  @Test
  void theKeyPatternFollowsThePrefixAndAnInvalidPrefixIsRefused() {
    assertThat(RedisAcl.keyPattern("billing.eu")).isEqualTo("~billing.eu:{*");
    assertThat(RedisAcl.operator("billing.eu")).startsWith("resetkeys ~billing.eu:{* resetchannels -@all ")
        .doesNotContain("handoff");
    assertThatThrownBy(() -> RedisAcl.relay("a*b")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPrefix");
  }

  @Test
  void everyCommandTheRelaysScriptsCallIsGranted() {
    List<LuaScript> streams = List.of(LuaScript.resource("/dev/handoff/relay/publish.lua"),
        LuaScript.resource("/dev/handoff/core/trim.lua"), LuaScript.resource("/dev/handoff/relay/gone.lua"));
    List<LuaScript> lists = List.of(LuaScript.resource("/dev/handoff/relay/list-push.lua"),
        LuaScript.resource("/dev/handoff/relay/list-room.lua"),
        ListScripts.resource("/dev/handoff/core/list-watermark.lua"));
    for (LuaScript s : streams) {
      assertThat(RedisAcl.commands(RedisAcl.relay("handoff", Transport.STREAM))).as("%s", s)
          .containsAll(s.commands());
    }
    for (LuaScript s : lists) {
      assertThat(RedisAcl.commands(RedisAcl.relay("handoff", Transport.LIST))).as("%s", s)
          .containsAll(s.commands());
    }
    assertThat(streams.get(0).commands()).containsExactly("EXISTS", "HGET", "HSET", "XADD", "XRANGE");
    assertThat(streams.get(1).commands()).containsExactly("EXISTS", "XINFO|GROUPS", "XLEN", "XPENDING", "XTRIM");
    assertThat(streams.get(2).commands()).containsExactly("EXISTS", "XINFO|GROUPS", "XINFO|STREAM", "XRANGE");
  }
}
