package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicStatus;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.RedisUrl;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/** The status of any topic, found without being named, with exact numbers for each stage of the path. */
@HandoffTest
class TopicInspectorTest {

  private final TestEnvironment env;

  TopicInspectorTest(TestEnvironment env) {
    this.env = env;
  }

  private TopicInspector inspector() {
    return TopicInspector.builder(env.dataSource(), RedisConnectionSpec.of(RedisUrl.parse(env.redisUri())))
        .schema(env.schema()).keyPrefix(env.keyPrefix()).build();
  }

  private void append(String topic, int shards, int n) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(topic).withShards(shards)).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        outbox.append(tx, Message.builder(topic, "order.placed").key("order-" + i).payload("p" + i).build());
      }
      tx.commit();
    }
  }

  private Map<Integer, Long> publishedPerShard(String topic) {
    return env.queryList("select shard from outbox where topic = ? and published_at is not null", Integer.class,
        topic).stream().collect(Collectors.groupingBy(s -> s, Collectors.counting()));
  }

  @Test
  void aStreamTopicShowsOutboxDepthLeasesStreamsBacklogAndPendingExactly() throws Exception {
    append("orders", 3, 30);
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("orders").withShards(3)).topic(TopicConfig.of("refunds").withShards(2)).build();
        StreamConsumer billing = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic(TopicConfig.of("orders").withShards(3)).group("billing")
            .batchSize(4).handler((tx, m) -> { }).build();
        TopicInspector inspector = inspector()) {
      assertThat(relay.relayOnce().published()).isEqualTo(30);
      append("orders", 3, 7);
      int handled = billing.pollOnce().handled();
      assertThat(handled).isBetween(1, 4);
      // One entry of each shard delivered to a consumer that never acknowledges it: pending, not backlog.
      long stuck = 0;
      for (int shard = 0; shard < 3; shard++) {
        var read = env.redis().xreadGroup("billing", "stuck", XReadGroupParams.xReadGroupParams().count(1),
            Map.of(StreamFormat.streamKey(env.keyPrefix(), "orders", shard), StreamEntryID.UNRECEIVED_ENTRY));
        stuck += read == null ? 0 : read.stream().mapToLong(e -> e.getValue().size()).sum();
      }
      assertThat(stuck).isEqualTo(3);

      // "jobs" is the list test's, present when it ran first.
      assertThat(inspector.topics()).containsSubsequence("orders", "refunds")
          .isSubsetOf("jobs", "orders", "refunds");
      TopicStatus status = inspector.status("orders");
      assertThat(status.transports()).containsExactly(Transport.STREAM);
      assertThat(status.outboxDepth()).isEqualTo(7);
      assertThat(status.oldestUnpublishedAge()).isNotNull();
      Map<Integer, Long> published = publishedPerShard("orders");
      assertThat(status.shards()).hasSize(3).allSatisfy(s -> {
        assertThat(s.lease().owner()).isEqualTo(relay.config().owner());
        assertThat(s.lease().live()).isTrue();
        assertThat(s.lease().epoch()).isPositive();
        assertThat(s.stream().exists()).isTrue();
        assertThat(s.stream().length()).as("shard %d", s.shard()).isEqualTo(published.getOrDefault(s.shard(), 0L));
        assertThat(s.stream().firstEntryId()).isNotNull();
        assertThat(s.stream().lastEntryAge()).isNotNull();
      });
      assertThat(status.shards().stream().mapToLong(TopicStatus.ShardStatus::outboxDepth).sum()).isEqualTo(7);

      assertThat(status.streamGroups()).singleElement().satisfies(g -> {
        assertThat(g.group()).isEqualTo("billing");
        assertThat(g.pending()).isEqualTo(3);
        assertThat(g.backlog()).isEqualTo(30 - handled - 3);
        assertThat(g.deadLetters()).isZero();
        assertThat(g.streams()).allSatisfy(s -> {
          assertThat(s.pending().consumers()).containsEntry("stuck", 1L);
          assertThat(s.pending().deliveryHistogram()).containsExactly(Map.entry(1L, 1L));
          assertThat(s.pending().oldestAge()).isNotNull();
        });
      });
      assertThat(inspector.status("orders", "nobody").streamGroups()).isEmpty();

      // The operator's database role reads the same numbers: its grants cover what discovery and status select.
      try (var operatorDb = env.newRole().grant(dev.handoff.migrations.HandoffGrants.Role.OPERATOR)
          .newDataSource(2);
          TopicInspector asOperator = TopicInspector.builder(operatorDb,
              RedisConnectionSpec.of(RedisUrl.parse(env.redisUri()))).schema(env.schema())
              .keyPrefix(env.keyPrefix()).build()) {
        assertThat(asOperator.topics()).containsSubsequence("orders", "refunds")
            .isSubsetOf("jobs", "orders", "refunds");
        TopicStatus seen = asOperator.status("orders");
        assertThat(seen.outboxDepth()).isEqualTo(7);
        assertThat(seen.streamGroups()).singleElement().satisfies(g -> {
          assertThat(g.pending()).isEqualTo(3);
          assertThat(g.backlog()).isEqualTo(30 - handled - 3);
        });
      }

      TopicStatus refunds = inspector.status("refunds");
      assertThat(refunds.shards()).hasSize(2).allSatisfy(s -> {
        assertThat(s.stream().exists()).isFalse();
        assertThat(s.lease().owner()).isEqualTo(relay.config().owner());
      });
      assertThat(refunds.transports()).isEmpty();
      assertThat(refunds.streamGroups()).isEmpty();
    }
  }

  @Test
  void aListTopicShowsWaitingAndInProcessingWithOrWithoutAKnownGroup() throws Exception {
    append("jobs", 2, 10);
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("jobs").withShards(2)).listTransport(100).build();
        ListConsumer workers = ListConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic(TopicConfig.of("jobs").withShards(2)).group("workers").batchSize(3)
            .heartbeatTtl(Duration.ofSeconds(30)).handler((tx, m) -> { }).build();
        TopicInspector inspector = inspector()) {
      assertThat(relay.relayOnce().published()).isEqualTo(10);
      int handled = workers.pollOnce().handled();
      assertThat(handled).isBetween(1, 3);

      TopicStatus status = inspector.status("jobs");
      assertThat(status.transports()).isEqualTo(Set.of(Transport.LIST));
      assertThat(status.outboxDepth()).isZero();
      assertThat(status.streamGroups()).isEmpty();
      assertThat(status.listGroups()).singleElement().satisfies(g -> {
        assertThat(g.group()).isEqualTo("*");
        assertThat(g.waiting()).isEqualTo(10 - handled);
        assertThat(g.inProcessing()).isZero();
        assertThat(g.deadLetters()).isZero();
      });
      assertThat(inspector.status("jobs", "workers").listGroups()).singleElement()
          .satisfies(g -> assertThat(g.group()).isEqualTo("workers"));
    }
  }

  @Test
  void aTopicKnownNowhereHasNoShardsAndABadNameIsRefusedByName() {
    try (TopicInspector inspector = inspector()) {
      TopicStatus status = inspector.status("ghost");
      assertThat(status.shards()).isEmpty();
      assertThat(status.streamGroups()).isEmpty();
      assertThat(status.outboxDepth()).isZero();
      assertThatThrownBy(() -> inspector.status("no spaces")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no spaces");
    }
  }
}
