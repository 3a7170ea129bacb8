package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;

@HandoffTest
class RelaySharingAndAnomalyTest {

  private final TestEnvironment env;

  RelaySharingAndAnomalyTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    String orders = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    env.redis().del(orders, orders + ":relay");
  }

  @Test
  void severalRelaysSplitTheShardsAndTheSurvivorTakesThemAll() throws Exception {
    Duration ttl = Duration.ofMillis(900);
    Relay a = relay().owner("relay-a").leaseTtl(ttl).build();
    Relay b = relay().owner("relay-b").leaseTtl(ttl).build();
    a.start();
    b.start();
    try {
      await().atMost(Duration.ofSeconds(15)).until(() ->
          a.ownedShards().size() == 2 && b.ownedShards().size() == 2);
      Set<ShardId> union = new HashSet<>(a.ownedShards());
      union.addAll(b.ownedShards());
      assertThat(union).hasSize(4);

      append(400);
      await().atMost(Duration.ofSeconds(15))
          .until(() -> env.queryLong("select count(*) from outbox where published_at is null") == 0);
      assertThat(totalEntries()).isEqualTo(400);

      a.close();
      await().atMost(ttl.multipliedBy(6)).until(() -> b.ownedShards().size() == 4);
      append(400);
      await().atMost(Duration.ofSeconds(15))
          .until(() -> env.queryLong("select count(*) from outbox where published_at is null") == 0);
      assertThat(totalEntries()).isEqualTo(800);
    } finally {
      a.close();
      b.close();
    }
  }

  @Test
  void anEntryWrittenBySomeoneElseMakesTheRelayReassignAndReportIt() throws Exception {
    String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    AtomicInteger anomalies = new AtomicInteger();
    AtomicBoolean strangerWrites = new AtomicBoolean();
    long future = System.currentTimeMillis() + 60_000;
    Relay relay = Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema()).keyPrefix(env.keyPrefix()).topic(TopicConfig.of("orders"))
        .listener(new RelayListener() {
          @Override
          public void anomaly(ShardId shard, int rows, String detail) {
            anomalies.addAndGet(rows);
          }
        })
        .faults(new RelayFaults() {
          @Override
          public void beforeStreamWrite(ShardId shard, int rows) {
            if (strangerWrites.compareAndSet(true, false)) {
              env.redis().xadd(key, new StreamEntryID(future, 0), Map.of("stranger", "yes"));
            }
          }
        }).build();
    appendTo("orders", 20);
    relay.relayOnce();
    // Between assignment and the write, a stranger adds an entry far in the future of the stream.
    appendTo("orders", 30);
    strangerWrites.set(true);
    relay.relayOnce();
    relay.relayOnce();

    assertThat(anomalies.get()).isEqualTo(30);
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
    List<redis.clients.jedis.resps.StreamEntry> all = env.redis().xrange(key, (StreamEntryID) null, null);
    assertThat(all).hasSize(51);
    assertThat(all.stream().filter(e -> e.getFields().containsKey("message_id")).map(e -> e.getFields()
        .get("message_id")).distinct()).hasSize(50);
    assertThat(env.queryLong("select count(*) from outbox where stream_ms >= ?", future)).isEqualTo(30);
    relay.close();
  }

  @Test
  void aSecondKeyPrefixOnTheSameSchemaIsRefusedInsteadOfTakenForDataLoss() throws Exception {
    appendTo("orders", 5);
    try (Relay first = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic(TopicConfig.of("orders")).build();
        Relay other = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix() + "-other").topic(TopicConfig.of("refunds")).topic(TopicConfig.of("orders"))
            .build()) {
      assertThat(first.relayOnce().published()).isEqualTo(5);
      org.assertj.core.api.Assertions.assertThatThrownBy(other::relayOnce)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("prefix '" + env.keyPrefix() + "'")
          .hasMessageContaining("keyPrefix '" + env.keyPrefix() + "-other'");
      assertThat(env.redis().exists(StreamFormat.streamKey(env.keyPrefix() + "-other", "orders", 0))).isFalse();
      assertThat(env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "orders", 0))).isEqualTo(5);
      assertThat(env.queryLong("select count(*) from relay_lease where topic = 'refunds'"))
          .as("a new topic's shards are not claimed for the refused prefix").isZero();
    }
  }

  private long totalEntries() {
    long n = 0;
    for (int s = 0; s < 4; s++) {
      n += env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "payments", s));
    }
    return n;
  }

  private dev.handoff.relay.RelayBuilder relay() {
    return Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("payments").withShards(4))
        .idlePollInterval(Duration.ofMillis(100));
  }

  private void append(int n) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("payments").withShards(4)).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        batch.add(Message.builder("payments", "payment.created").key("pay-" + i).payload("x").build());
      }
      outbox.appendAll(tx, batch);
      tx.commit();
    }
  }

  private void appendTo(String topic, int n) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        batch.add(Message.builder(topic, "order.placed").payload("o" + i).build());
      }
      outbox.appendAll(tx, batch);
      tx.commit();
    }
  }
}
