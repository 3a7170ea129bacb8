package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * The repair of entries gone from a stream, without consumers (groups are driven by hand): what a dry run and a
 * real run find and do, a gone pending entry with and without its outbox row, and the relay's own check in its
 * maintenance, which runs only after a deletion.
 */
@HandoffTest
class StreamRepairTest {

  private final TestEnvironment env;

  StreamRepairTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aDryRunChangesNothingAndReportsWhatTheRealRunThenDoes() throws Exception {
    String topic = "repair-dry";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = RelayTestSupport.relay(env, topic).build()) {
      RelayTestSupport.append(env, topic, 100);
      relay.relayOnce();
      env.redis().xgroupCreate(key, "g", new StreamEntryID(0, 0), false);
      List<RelayTestSupport.Entry> before = RelayTestSupport.entries(env.redis(), key);
      List<Long> deletedRows = deleteEntries(before.subList(20, 30));
      List<RelayTestSupport.Entry> afterXdel = RelayTestSupport.entries(env.redis(), key);
      List<String> rowsBefore = rows(topic);

      RepairReport dry = repair().repair(topic, true);
      assertThat(dry.dryRun()).isTrue();
      assertThat(dry.shards()).singleElement().satisfies(s -> {
        assertThat(s.skipped()).isEmpty();
        assertThat(s.threshold()).isEqualTo("0-0");
        assertThat(s.rowsChecked()).isEqualTo(100);
        assertThat(s.rowsReset()).isEqualTo(deletedRows);
        assertThat(s.acknowledged()).isEmpty();
        assertThat(s.unrecoverable()).isEmpty();
      });
      assertThat(rows(topic)).as("the outbox is as it was").isEqualTo(rowsBefore);
      assertThat(RelayTestSupport.entries(env.redis(), key)).as("the stream is as it was")
          .isEqualTo(afterXdel);

      RepairReport real = repair().repair(topic, false);
      assertThat(real.rowsReset()).isEqualTo(dry.rowsReset()).isEqualTo(10);
      assertThat(real.shards().get(0).rowsReset()).isEqualTo(deletedRows);
      assertThat(env.queryList("SELECT id FROM outbox WHERE topic = ? AND published_at IS NULL"
          + " AND stream_ms IS NULL ORDER BY id", Long.class, topic)).isEqualTo(deletedRows);
      assertThat(RelayTestSupport.entries(env.redis(), key)).as("repair never writes the stream").isEqualTo(afterXdel);

      assertThat(relay.relayOnce().published()).isEqualTo(10);
    }
    List<RelayTestSupport.Entry> repaired = RelayTestSupport.entries(env.redis(), key);
    assertThat(repaired).hasSize(100);
    assertThat(repaired.stream().map(e -> e.message().messageId()).distinct()).hasSize(100);
    // The ten come again at the end, with new IDs, in id order; the stream IDs match the rows.
    assertThat(repaired.subList(90, 100).stream().map(e -> e.message().outboxId()).toList())
        .isEqualTo(env.queryList("SELECT id FROM outbox WHERE topic = ? ORDER BY id", Long.class, topic)
            .subList(20, 30));
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, repaired);
    assertThat(repair().repair(topic, false).rowsReset()).as("nothing left to repair").isZero();
  }

  @Test
  void aGonePendingEntryIsResetAndAcknowledgedAndOneWhoseRowWasPurgedIsUnrecoverable() throws Exception {
    String topic = "repair-pending";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    try (Relay relay = RelayTestSupport.relay(env, topic).build()) {
      RelayTestSupport.append(env, topic, 20);
      relay.relayOnce();
      env.redis().xgroupCreate(key, "g", new StreamEntryID(0, 0), false);
      env.redis().xreadGroup("g", "c1", XReadGroupParams.xReadGroupParams().count(5),
          Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key);
      RelayTestSupport.Entry purged = entries.get(0);
      RelayTestSupport.Entry gone = entries.get(3);
      deleteEntries(List.of(purged, gone));
      env.execute("DELETE FROM outbox WHERE id = " + purged.message().outboxId()); // as the retention would

      List<String> pendingBefore = pendingIds(key);
      RepairReport dry = repair().repair(topic, true);
      assertThat(pendingIds(key)).as("a dry run acknowledges nothing").isEqualTo(pendingBefore);
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND published_at IS NULL", topic))
          .isZero();

      RepairReport report = repair().repair(topic, false);
      RepairReport.ShardRepair s = report.shards().get(0);
      assertThat(dry.shards().get(0)).usingRecursiveComparison().isEqualTo(s);
      assertThat(s.threshold()).as("g's last-delivered ID").isEqualTo(entries.get(4).id());
      assertThat(s.rowsReset()).containsExactly(gone.message().outboxId());
      assertThat(s.acknowledged()).isEqualTo(Map.of("g", 1));
      assertThat(s.unrecoverable()).containsExactly(purged.id());
      assertThat(pendingIds(key)).as("the unrecoverable one stays pending for its consumers to dead-letter")
          .containsExactly(purged.id(), entries.get(1).id(), entries.get(2).id(), entries.get(4).id());
      assertThat(relay.relayOnce().published()).isEqualTo(1);
      List<RelayTestSupport.Entry> after = RelayTestSupport.entries(env.redis(), key);
      assertThat(after).as("the 20 less the one whose row is gone").hasSize(19);
      assertThat(after.get(18).message().messageId()).as("sent again at the end")
          .isEqualTo(gone.message().messageId());
    }
  }

  @Test
  void theRelaysMaintenanceRepairsADeletionByItselfOnceAndLooksAtNoRowWhenNothingWasDeleted() throws Exception {
    String topic = "repair-relay";
    String key = StreamFormat.streamKey(env.keyPrefix(), topic, 0);
    MeterRegistry registry = new SimpleMeterRegistry();
    List<RepairReport.ShardRepair> heard = new CopyOnWriteArrayList<>();
    try (LogCapture logs = LogCapture.start();
        Relay relay = RelayTestSupport.relay(env, topic).meterRegistry(registry).listener(new RelayListener() {
          @Override
          public void entriesDeleted(ShardId shard, RepairReport.ShardRepair repair) {
            heard.add(repair);
          }
        }).build()) {
      RelayTestSupport.append(env, topic, 30);
      relay.relayOnce();
      env.redis().xgroupCreate(key, "g", new StreamEntryID(0, 0), false);
      RetentionReport quiet = relay.maintainOnce();
      assertThat(quiet.repairs()).as("nothing deleted: no check, no outbox row read").isEmpty();

      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key);
      List<Long> deleted = deleteEntries(entries.subList(10, 13));
      RetentionReport found = relay.maintainOnce();
      assertThat(found.repairs()).singleElement().satisfies(s -> {
        assertThat(s.rowsReset()).isEqualTo(deleted);
        assertThat(s.rowsChecked()).isEqualTo(30);
      });
      assertThat(heard).singleElement().satisfies(s -> assertThat(s.rowsReset()).isEqualTo(deleted));
      assertThat(registry.get("handoff.relay.repairs").tag("topic", topic).tag("kind", "entries_deleted")
          .counter().count()).isEqualTo(3);
      assertThat(logs.warnings()).filteredOn(l -> l.contains("entries still needed were deleted"))
          .singleElement().asString().startsWith("WARN").contains("3 rows reset");

      assertThat(relay.relayOnce().published()).isEqualTo(3);
      assertThat(relay.maintainOnce().repairs()).as("the same deletion is repaired once").isEmpty();
    }
    List<RelayTestSupport.Entry> after = RelayTestSupport.entries(env.redis(), key);
    assertThat(after).hasSize(30);
    assertThat(after.stream().map(e -> e.message().messageId()).distinct()).hasSize(30);
  }

  @Test
  void aTopicOnListsIsRefusedWithAClearLine() throws Exception {
    String topic = "repair-list";
    try (Relay relay = RelayTestSupport.relay(env, topic).listTransport(1000).build()) {
      RelayTestSupport.append(env, topic, 3);
      relay.relayOnce();
    }
    assertThatThrownBy(() -> repair().repair(topic, true)).isInstanceOf(RepairException.class)
        .hasMessageContaining("topic " + topic + " is relayed to Redis lists")
        .hasMessageContaining("streams only");
    assertThatThrownBy(() -> repair().repair("never-relayed", true)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("topic never-relayed has no shard");
  }

  private StreamRepair repair() {
    return StreamRepair.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .build();
  }

  /** XDELs the entries; returns their outbox ids. */
  private List<Long> deleteEntries(List<RelayTestSupport.Entry> entries) {
    String key = StreamFormat.streamKey(env.keyPrefix(), entries.get(0).message().topic(), 0);
    for (RelayTestSupport.Entry e : entries) {
      assertThat(env.redis().xdel(key, new StreamEntryID(e.id()))).isEqualTo(1);
    }
    return entries.stream().map(e -> e.message().outboxId()).sorted().toList();
  }

  private List<String> rows(String topic) {
    return env.queryList("SELECT id || ' ' || coalesce(stream_ms || '-' || stream_seq, '') || ' '"
        + " || coalesce(published_at::text, '') FROM outbox WHERE topic = ? ORDER BY id", String.class, topic);
  }

  private List<String> pendingIds(String key) {
    return env.redis().xpending(key, "g", XPendingParams.xPendingParams("-", "+", 100))
        .stream().map(StreamPendingEntry::getID).map(StreamEntryID::toString).toList();
  }
}
