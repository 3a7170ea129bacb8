package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * The Java example of docs/operations.md ("Entries deleted from a stream", from Java), line for line
 * (DocExamplesTest checks it), run as written: handoff's default schema and key prefix, in a database and a Redis of
 * the test's own. Two entries still needed are deleted, one of them pending in a group; the repair resets both rows
 * and acknowledges the gone pending entry, and the relay publishes the two again.
 */
@HandoffTest(migrate = false)
class StreamRepairExampleTest {

  private final TestEnvironment env;

  StreamRepairExampleTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void theRepairResetsTheRowsOfDeletedEntriesAndAcknowledgesTheGonePendingOne() throws Exception {
    DataSource dataSource = env.newDatabase();
    HandoffMigrations.migrate(dataSource);
    RestartableRedis server = env.privateRedis();
    RedisConnectionSpec redis = server.spec();
    RedisClient redisClient = env.newRedisClient(server.uri());
    String key = StreamFormat.streamKey("handoff", "orders", 0);
    List<RelayTestSupport.Entry> entries;
    try (Relay relay = Relay.builder(dataSource, redis).topic("orders").build()) {
      append(dataSource, 10);
      assertThat(relay.relayOnce().published()).isEqualTo(10);
      redisClient.xgroupCreate(key, "shipping", new StreamEntryID(0, 0), false);
      redisClient.xreadGroup("shipping", "shipping-1", XReadGroupParams.xReadGroupParams().count(4),
          Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      entries = RelayTestSupport.entries(redisClient, key);
      RelayTestSupport.Entry pending = entries.get(1);
      RelayTestSupport.Entry undelivered = entries.get(6);
      assertThat(redisClient.xdel(key, new StreamEntryID(pending.id()), new StreamEntryID(undelivered.id())))
          .isEqualTo(2);

      RepairReport report = StreamRepair.builder(dataSource, redis).schema("handoff").keyPrefix("handoff").build()
          .repair("orders", false);                     // true: a dry run
      report.rowsReset(); report.acknowledged(); report.unrecoverable();

      assertThat(report.rowsReset()).isEqualTo(2);
      assertThat(report.acknowledged()).isEqualTo(1);
      assertThat(report.unrecoverable()).isZero();
      assertThat(report.shards()).singleElement().satisfies(s -> {
        assertThat(s.rowsReset()).containsExactly(pending.message().outboxId(), undelivered.message().outboxId());
        assertThat(s.acknowledged()).isEqualTo(Map.of("shipping", 1));
      });
      assertThat(redisClient.xpending(key, "shipping").getTotal()).as("the gone pending entry acknowledged")
          .isEqualTo(3);
      assertThat(relay.relayOnce().published()).as("the two rows published again").isEqualTo(2);
    }
    List<RelayTestSupport.Entry> repaired = RelayTestSupport.entries(redisClient, key);
    assertThat(repaired).hasSize(10);
    assertThat(repaired.subList(8, 10)).extracting(e -> e.message().outboxId())
        .containsExactly(entries.get(1).message().outboxId(), entries.get(6).message().outboxId());
  }

  private static void append(DataSource dataSource, int n) throws Exception {
    Outbox outbox = Outbox.builder().build();
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      messages.add(Message.builder("orders", "order.placed").key("order-" + i).build());
    }
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, messages);
      tx.commit();
    }
  }
}
