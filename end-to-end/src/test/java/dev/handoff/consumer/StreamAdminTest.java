package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.admin.RewindPlan;
import dev.handoff.consumer.admin.RewindRefusedException;
import dev.handoff.consumer.admin.RewindTarget;
import dev.handoff.consumer.admin.StreamAdmin;
import dev.handoff.consumer.admin.TrimReport;
import dev.handoff.core.RedisAcl;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.RedisUrl;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.params.XTrimParams;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.resps.StreamGroupInfo;

/**
 * The operator's rewind and trim on real servers: a rewind within retention re-delivers exactly the entries it
 * counted (duplicates to the inbox, effects unchanged), a dry run changes nothing, a rewind below what a shard
 * retains is refused with no shard changed, and a trim removes exactly what every group finished and leaves the
 * groups as they were.
 */
@HandoffTest
class StreamAdminTest {

  private final TestEnvironment env;

  StreamAdminTest(TestEnvironment env) {
    this.env = env;
  }

  /** Shard 0 gets entries 1000-0..1009-0, shard 1 gets 1000-0, 1002-0, ..., 1014-0 (8 entries). */
  private static void publishTwoShards(Fixture f) {
    for (int i = 0; i < 10; i++) {
      f.publish(f.message(), (1000 + i) + "-0", 0);
    }
    for (int i = 0; i < 8; i++) {
      f.publish(f.message(), (1000 + 2 * i) + "-0", 1);
    }
  }

  private StreamConsumer consumer(Fixture f, String group) {
    return f.consumer(group).topic(TopicConfig.of(f.topic).withShards(2)).build();
  }

  private static PollResult drain(StreamConsumer consumer) {
    PollResult total = PollResult.EMPTY;
    for (int i = 0; i < 100; i++) {
      PollResult r = consumer.pollOnce();
      if (r.isEmpty()) {
        return total;
      }
      total = total.plus(r);
    }
    throw new AssertionError("consumer still busy after 100 polls");
  }

  private StreamAdmin admin() {
    return StreamAdmin.builder(env.redisSpec()).keyPrefix(env.keyPrefix()).build();
  }

  private Map<String, Object> group(Fixture f, int shard, String group) {
    for (StreamGroupInfo g : f.redis.xinfoGroups(f.streamKey(shard))) {
      if (g.getName().equals(group)) {
        return g.getGroupInfo();
      }
    }
    throw new AssertionError("no group " + group + " on shard " + shard);
  }

  private String lastDelivered(Fixture f, int shard, String group) {
    return group(f, shard, group).get(StreamGroupInfo.LAST_DELIVERED).toString();
  }

  @Test
  void aRewindToATimeWithinRetentionRedeliversExactlyTheCountedEntriesAsDuplicates() {
    Fixture f = new Fixture(env, "rewind-time");
    publishTwoShards(f);
    try (StreamConsumer consumer = consumer(f, "g"); StreamAdmin admin = admin()) {
      assertThat(drain(consumer).handled()).isEqualTo(18);
      assertThat(admin.shards(f.topic)).containsExactly(0, 1);
      RewindTarget to = RewindTarget.time(Instant.ofEpochMilli(1005));

      RewindPlan dry = admin.rewind(f.topic, "g", to, true);

      assertThat(dry.dryRun()).isTrue();
      assertThat(dry.shards()).extracting(RewindPlan.Shard::comeAgain).containsExactly(5L, 5L);
      assertThat(dry.exact()).isTrue();
      assertThat(dry.shards()).extracting(RewindPlan.Shard::lastDeliveredBefore).containsExactly("1009-0", "1014-0");
      assertThat(lastDelivered(f, 0, "g")).isEqualTo("1009-0");
      assertThat(lastDelivered(f, 1, "g")).isEqualTo("1014-0");
      assertThat(dry.toString()).contains("10 entries would come again");

      RewindPlan plan = admin.rewind(f.topic, "g", to, false);

      assertThat(plan.comeAgain()).isEqualTo(10);
      assertThat(plan.shards()).extracting(RewindPlan.Shard::setTo)
          .containsExactly("1004-" + Long.MAX_VALUE, "1004-" + Long.MAX_VALUE);
      assertThat(lastDelivered(f, 0, "g")).isEqualTo("1004-" + Long.MAX_VALUE);
      // entries-read is set so that the lag is what the group reads again
      assertThat(group(f, 0, "g").get("lag")).isEqualTo(5L);
      assertThat(group(f, 1, "g").get("lag")).isEqualTo(5L);

      PollResult again = drain(consumer);

      assertThat(again.read()).isEqualTo(10);
      assertThat(again.duplicates()).isEqualTo(10);
      assertThat(again.handled()).isZero();
      assertThat(f.effectCount("g")).isEqualTo(18);
      assertThat(f.doubleEffects("g")).isZero();
      assertThat(f.pendingTotal("g", 0) + f.pendingTotal("g", 1)).isZero();
    }
  }

  @Test
  void pendingEntriesStayPendingAndAnEntryIdTargetIncludesThatEntry() {
    Fixture f = new Fixture(env, "rewind-pending");
    for (int i = 0; i < 6; i++) {
      f.publish(f.message(), (2000 + i) + "-0", 0);
    }
    f.createGroupAtStart("p");
    // a consumer that died holding 2000-0..2002-0: read, never acknowledged
    f.redis.xreadGroup("p", "dead", XReadGroupParams.xReadGroupParams().count(3),
        Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
    try (StreamAdmin admin = admin()) {
      RewindPlan plan = admin.rewind(f.topic, "p", RewindTarget.entryId("2001-0"), false);

      assertThat(plan.shards()).singleElement().satisfies(s -> {
        assertThat(s.comeAgain()).isEqualTo(2); // 2001-0 and 2002-0
        assertThat(s.pending()).isEqualTo(3);
        assertThat(s.setTo()).isEqualTo("2000-" + Long.MAX_VALUE);
      });
      assertThat(f.pendingTotal("p")).isEqualTo(3);
      assertThat(f.pending("p")).extracting(e -> e.getConsumerName()).containsOnly("dead");
    }
  }

  @Test
  void aRewindBelowWhatAShardRetainsIsRefusedAndNoShardChanges() {
    Fixture f = new Fixture(env, "rewind-below");
    publishTwoShards(f);
    try (StreamConsumer consumer = consumer(f, "g"); StreamAdmin admin = admin()) {
      drain(consumer);
      f.redis.xtrim(f.streamKey(1), XTrimParams.xTrimParams().minId("1006-0").exactTrimming());

      assertThatThrownBy(() -> admin.rewind(f.topic, "g", RewindTarget.entryId("1003"), false))
          .isInstanceOfSatisfying(RewindRefusedException.class, e -> {
            assertThat(e.reason()).isEqualTo(RewindRefusedException.Reason.BELOW_RETENTION);
            assertThat(e.shard()).isEqualTo(1);
            assertThat(e.oldestRetainedId()).isEqualTo("1006-0");
            assertThat(e.getMessage()).contains("shard 1", "1006-0", "replayFromOutbox").doesNotContain("\n");
          });
      assertThat(lastDelivered(f, 0, "g")).isEqualTo("1009-0");
      assertThat(lastDelivered(f, 1, "g")).isEqualTo("1014-0");

      // at the oldest retained entry it goes through; a never-trimmed shard goes back to its very first entry
      assertThat(admin.rewind(f.topic, "g", RewindTarget.entryId("1006-0"), true).comeAgain()).isEqualTo(4 + 5);
      assertThat(admin.rewind(f.topic, "g", RewindTarget.entryId("0-0").onShard(0), true).shards())
          .singleElement().extracting(RewindPlan.Shard::comeAgain).isEqualTo(10L);

      // an XDEL below the oldest entry is a removal too
      f.redis.xdel(f.streamKey(0), new StreamEntryID(1000, 0));
      assertThatThrownBy(() -> admin.rewind(f.topic, "g", RewindTarget.entryId("0-0").onShard(0), true))
          .isInstanceOfSatisfying(RewindRefusedException.class,
              e -> assertThat(e.oldestRetainedId()).isEqualTo("1001-0"));

      assertThatThrownBy(() -> admin.rewind(f.topic, "nobody", RewindTarget.entryId("1006-0"), true))
          .isInstanceOfSatisfying(RewindRefusedException.class, e -> {
            assertThat(e.reason()).isEqualTo(RewindRefusedException.Reason.NO_GROUP);
            assertThat(e.getMessage()).contains("'nobody'", "shard 0");
          });
      assertThatThrownBy(() -> admin.rewind("no-such-topic", "g", RewindTarget.entryId("1"), true))
          .isInstanceOfSatisfying(RewindRefusedException.class,
              e -> assertThat(e.reason()).isEqualTo(RewindRefusedException.Reason.NO_SHARD));
      assertThat(lastDelivered(f, 0, "g")).isEqualTo("1009-0");
      assertThat(lastDelivered(f, 1, "g")).isEqualTo("1014-0");
    }
  }

  @Test
  void aTrimRemovesExactlyWhatEveryGroupFinishedAndLeavesTheGroupsAsTheyWere() throws Exception {
    Fixture f = new Fixture(env, "trim-groups");
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(f.topic).withShards(2)).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < 60; i++) {
        outbox.append(tx, Message.builder(f.topic, "test.event").key("k" + i).payload("ok").build());
      }
      tx.commit();
    }
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(f.topic).withShards(2)).trimStreams(false).build();
        StreamAdmin admin = StreamAdmin.builder(env.redisSpec()).keyPrefix(env.keyPrefix())
            .dataSource(env.dataSource()).schema(env.schema()).build()) {
      TransportSide.publishAll(env, relay);
      Map<Integer, List<String>> ids = new HashMap<>();
      for (int shard = 0; shard < 2; shard++) {
        String key = f.streamKey(shard);
        List<String> onShard = new ArrayList<>();
        for (StreamEntry e : f.redis.xrange(key, "-", "+")) {
          onShard.add(e.getID().toString());
        }
        assertThat(onShard).hasSizeGreaterThanOrEqualTo(12);
        ids.put(shard, onShard);
        // "fast" finished everything; "slow" finished 10 and holds 2 pending
        f.redis.xgroupCreate(key, "fast", StreamEntryID.XGROUP_LAST_ENTRY, false);
        f.redis.xgroupCreate(key, "slow", new StreamEntryID(onShard.get(9)), false);
        f.redis.xreadGroup("slow", "c", XReadGroupParams.xReadGroupParams().count(2),
            Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      }
      assertThat(admin.shards(f.topic)).containsExactly(0, 1);
      Map<String, Object> slowBefore = group(f, 0, "slow");

      TrimReport dry = admin.trim(f.topic, true);

      assertThat(dry.removed()).isEqualTo(20);
      for (int shard = 0; shard < 2; shard++) {
        TrimReport.Shard s = dry.shards().get(shard);
        List<String> onShard = ids.get(shard);
        assertThat(s.trimPoint()).isEqualTo(onShard.get(10));
        assertThat(s.holder()).isEqualTo("slow");
        assertThat(s.lengthAfter()).isEqualTo(onShard.size());
        assertThat(s.groups()).containsExactly(
            new TrimReport.Group("fast", onShard.get(onShard.size() - 1), 0, true, 0, null),
            new TrimReport.Group("slow", onShard.get(11), onShard.size() - 12, true, 2, onShard.get(10)));
        assertThat(f.redis.xlen(f.streamKey(shard))).isEqualTo(onShard.size());
      }

      List<TrimReport.Shard> progress = new ArrayList<>();
      TrimReport trimmed = admin.trim(f.topic, false, progress::add);

      assertThat(trimmed.shards()).extracting(TrimReport.Shard::removed).containsExactly(10L, 10L);
      assertThat(progress).isEqualTo(trimmed.shards());
      for (int shard = 0; shard < 2; shard++) {
        List<String> onShard = ids.get(shard);
        assertThat(f.redis.xlen(f.streamKey(shard))).isEqualTo(onShard.size() - 10);
        assertThat(f.redis.xrange(f.streamKey(shard), "-", "+", 1).get(0).getID().toString())
            .isEqualTo(onShard.get(10));
        assertThat(lastDelivered(f, shard, "slow")).isEqualTo(onShard.get(11));
        assertThat(f.pendingTotal("slow", shard)).isEqualTo(2);
        assertThat(lastDelivered(f, shard, "fast")).isEqualTo(onShard.get(onShard.size() - 1));
      }
      assertThat(group(f, 0, "slow")).isEqualTo(slowBefore);
      assertThat(admin.trim(f.topic, false).removed()).isZero();
    }
  }

  @Test
  void aStreamWithoutAGroupIsNotTrimmed() throws Exception {
    Fixture f = new Fixture(env, "trim-nogroup");
    TransportSide.append(env, f.topic, 7, i -> "ok");
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).trimStreams(false).build();
        StreamAdmin admin = admin()) {
      TransportSide.publishAll(env, relay);

      TrimReport r = admin.trim(f.topic, false);

      assertThat(r.shards()).singleElement().satisfies(s -> {
        assertThat(s.trimPoint()).isNull();
        assertThat(s.removed()).isZero();
        assertThat(s.lengthAfter()).isEqualTo(7);
        assertThat(s.toString()).contains("no group: nothing trimmed");
      });
      assertThat(f.redis.xlen(f.streamKey())).isEqualTo(7);

      // a group that has read nothing holds everything: the trim point is 0-0
      f.createGroupAtStart("new");
      assertThat(admin.trim(f.topic, true).shards()).singleElement().satisfies(s -> {
        assertThat(s.trimPoint()).isEqualTo("0-0");
        assertThat(s.holder()).isEqualTo("new");
        assertThat(s.removed()).isZero();
      });
      assertThat(admin.trim(f.topic, false).removed()).isZero();
      assertThat(f.redis.xlen(f.streamKey())).isEqualTo(7);
    }
  }
  @Test
  void rewindAndTrimRunUnderTheStreamAdminRuleAlone() throws Exception {
    RestartableRedis server = env.privateRedis();
    try (Jedis root = new Jedis("127.0.0.1", server.port())) {
      root.aclSetUser("admin", RedisAclTest.rule("admin-secret", RedisAcl.streamAdmin(env.keyPrefix())));
      root.aclLogReset();
    }
    try (RedisClient redis = env.newRedisClient(server.uri());
        StreamAdmin admin = StreamAdmin.builder(RedisConnectionSpec.of(RedisUrl.parse(
            RedisAclTest.login(server, "admin", "admin-secret")))).keyPrefix(env.keyPrefix())
            .dataSource(env.dataSource()).schema(env.schema()).build()) {
      Fixture f = new Fixture(env, "admin-acl", redis, server.uri());
      for (int i = 0; i < 10; i++) {
        f.publish(f.message(), (1000 + i) + "-0", 0);
      }
      f.createGroupAtStart("g");
      f.redis.xreadGroup("g", "c", XReadGroupParams.xReadGroupParams().count(6),
          Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      f.redis.xack(f.streamKey(), "g", new StreamEntryID(1000, 0), new StreamEntryID(1001, 0));
      env.execute("INSERT INTO " + env.schema() + ".relay_lease (topic, shard, key_prefix) VALUES ('" + f.topic
          + "', 0, '" + env.keyPrefix() + "')");

      assertThat(admin.trim(f.topic, true).removed()).isEqualTo(2);
      assertThat(admin.trim(f.topic, false).removed()).isEqualTo(2);
      assertThat(admin.rewind(f.topic, "g", RewindTarget.entryId("1003"), true).comeAgain()).isEqualTo(3);
      assertThat(admin.rewind(f.topic, "g", RewindTarget.entryId("1003"), false).comeAgain()).isEqualTo(3);
      assertThatThrownBy(() -> admin.rewind(f.topic, "g", RewindTarget.entryId("1000"), false))
          .isInstanceOf(RewindRefusedException.class);

      assertThat(redis.xlen(f.streamKey())).isEqualTo(8);
      assertThat(lastDelivered(f, 0, "g")).isEqualTo("1002-" + Long.MAX_VALUE);
      assertThat(RedisAclTest.refusals(server)).isEmpty();
    }
  }
}
