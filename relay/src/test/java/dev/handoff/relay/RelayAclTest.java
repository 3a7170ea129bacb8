package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The relay under a Redis user with exactly {@link RedisAcl#relay}: it publishes and maintains on both transports
 * with nothing refused; with one permission taken away, its error names the refused command and the missing
 * permission (Redis 7.0 itself names only the script's SHA), and a started relay backs off instead of spinning, then
 * carries on once the permission is granted.
 */
@HandoffTest
class RelayAclTest {

  private static final int ROWS = 25;

  private final TestEnvironment env;
  private RestartableRedis server;

  RelayAclTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void fresh() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    server = env.privateRedis();
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void publishesAndMaintainsUnderItsRuleAloneWithNothingRefused(Transport transport) throws Exception {
    String topic = "acl-" + transport.name().toLowerCase();
    setUser("relay", RedisAcl.relay(env.keyPrefix(), transport));
    RelayTestSupport.append(env, topic, ROWS);
    try (Relay relay = build(relay("relay", topic), transport)) {
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        relay.relayOnce();
        return RelayTestSupport.unpublished(env) == 0;
      });
      relay.maintainOnce(); // trim.lua on streams, list-watermark.lua on lists
    }
    try (Jedis admin = admin()) {
      String stream = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
      assertThat(transport == Transport.LIST ? admin.llen(ListFormat.listKey(env.keyPrefix(), topic, 0))
          : admin.xlen(stream)).isEqualTo(ROWS);
      assertThat(admin.aclLog()).as("commands Redis refused").isEmpty();
    }
    assertThat(RelayTestSupport.unpublished(env)).isZero();
  }

  @Test
  void aCommandRefusedInsideAScriptIsNamedWithItsPermissionAndTheStartedRelayBacksOff() throws Exception {
    String topic = "acl-no-exists";
    setUser("relay", RedisAcl.relay(env.keyPrefix()) + " -exists");
    RelayTestSupport.append(env, topic, ROWS);
    List<Throwable> errors = new CopyOnWriteArrayList<>();
    List<Duration> pauses = new CopyOnWriteArrayList<>();
    try (Relay relay = relay("relay", topic)
            .listener(new RelayListener() {
              @Override
              public void failed(Throwable error) {
                errors.add(error);
              }
            })
            .faults(new RelayFaults() {
              @Override
              public void afterFailedCycle(Throwable error, Duration pause) {
                pauses.add(pause);
              }
            })
            .build()) {
      relay.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> pauses.size() >= 5);
      // Granted, the same relay carries on by itself at its next attempt.
      try (Jedis admin = admin()) {
        admin.aclSetUser("relay", "+exists");
      }
      await().atMost(Duration.ofSeconds(20)).until(() -> RelayTestSupport.unpublished(env) == 0);
      relay.close(Duration.ofSeconds(2));
    }
    try (Jedis admin = admin()) {
      assertThat(admin.xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0))).isEqualTo(ROWS);
    }
    // Every cycle fails at EXISTS (trim.lua, then publish.lua once rows are confirmed), and says so.
    assertThat(errors).isNotEmpty().allSatisfy(e -> {
      assertThat(e).isInstanceOf(JedisAccessControlException.class);
      assertThat(e.getMessage())
          .contains("refused the command EXISTS", "the Redis user needs +exists")
          .containsPattern("of script '(trim|publish)'")
          .doesNotContainPattern("[0-9a-f]{40}");
    });
    // The pause doubles from 100 ms with every failure in a row, up to five idle poll intervals (1 s here).
    List<Long> millis = new ArrayList<>();
    pauses.forEach(p -> millis.add(p.toMillis()));
    assertThat(millis.subList(0, 5)).containsExactly(100L, 200L, 400L, 800L, 1_600L);
  }

  @Test
  void repairsDeletedEntriesUnderItsRuleAloneWithNothingRefused() throws Exception {
    String topic = "acl-repair";
    String stream = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    setUser("relay", RedisAcl.relay(env.keyPrefix()));
    RelayTestSupport.append(env, topic, ROWS);
    try (Relay relay = relay("relay", topic).build()) {
      relay.relayOnce();
      try (Jedis admin = admin()) {
        admin.xgroupCreate(stream, "g", new StreamEntryID(0, 0), false);
        admin.xreadGroup("g", "c", XReadGroupParams.xReadGroupParams().count(2),
            Map.of(stream, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
        List<StreamEntry> entries = admin.xrange(stream, "-", "+");
        admin.xdel(stream, entries.get(0).getID(), entries.get(10).getID()); // one pending, one never delivered
      }
      // The relay's own check (gone.lua, XPENDING, XACK), then the repair a shell runs with the same user.
      RetentionReport report = relay.maintainOnce();
      assertThat(report.repairs()).singleElement().satisfies(r -> {
        assertThat(r.rowsReset()).hasSize(2);
        assertThat(r.acknowledged()).isEqualTo(Map.of("g", 1));
      });
      assertThat(relay.relayOnce().published()).isEqualTo(2);
      RepairReport again = StreamRepair.builder(env.dataSource(), login("relay")).schema(env.schema())
          .keyPrefix(env.keyPrefix()).build().repair(topic, false);
      assertThat(again.rowsReset() + again.acknowledged() + again.unrecoverable()).isZero();
    }
    try (Jedis admin = admin()) {
      assertThat(admin.xlen(stream)).isEqualTo(ROWS);
      assertThat(admin.aclLog()).as("commands Redis refused").isEmpty();
    }
  }

  @Test
  void aDirectCommandRefusedIsNamedWithItsPermission() throws Exception {
    String topic = "acl-no-xinfo";
    setUser("relay", RedisAcl.relay(env.keyPrefix()) + " -xinfo|stream");
    RelayTestSupport.append(env, topic, ROWS);
    try (Relay relay = relay("relay", topic).build()) {
      assertThatThrownBy(relay::relayOnce)
          .isInstanceOf(JedisAccessControlException.class)
          .hasMessageContaining("Redis ACL refused XINFO|STREAM on [" + StreamFormat.streamKey(env.keyPrefix(), topic,
              0) + "]: the Redis user needs +xinfo|stream");
    }
    assertThat(RelayTestSupport.unpublished(env)).isEqualTo(ROWS);
  }

  private RelayBuilder relay(String user, String topic) {
    return Relay.builder(env.dataSource(), login(user))
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .idlePollInterval(Duration.ofSeconds(1));
  }

  private static Relay build(RelayBuilder builder, Transport transport) {
    return (transport == Transport.LIST ? builder.listTransport(1_000) : builder).build();
  }

  private void setUser(String user, String rule) {
    List<String> tokens = new ArrayList<>(List.of("reset", "on", ">" + user + "-secret"));
    tokens.addAll(List.of(rule.split(" ")));
    try (Jedis admin = admin()) {
      admin.aclSetUser(user, tokens.toArray(String[]::new));
      admin.aclLogReset();
    }
  }

  /** The server, logged in as {@code user}. */
  private RedisConnectionSpec login(String user) {
    return RedisConnectionSpec.of("redis://" + user + ":" + user + "-secret@127.0.0.1:" + server.port());
  }

  private Jedis admin() {
    return new Jedis("127.0.0.1", server.port());
  }
}
