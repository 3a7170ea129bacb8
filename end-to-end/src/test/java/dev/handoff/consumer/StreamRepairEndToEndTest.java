package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Transport;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RepairReport;
import dev.handoff.relay.StreamRepair;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * {@code StreamRepair} end to end with the real relay and a consumer: entries a group still needed and that were
 * deleted from the stream are published again and handled once; nothing else is handled twice, nothing is
 * dead-lettered or reported lost.
 */
@HandoffTest
class StreamRepairEndToEndTest {

  private final TestEnvironment env;

  StreamRepairEndToEndTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void fiftyEntriesAGroupHadNotReadDeletedWithXdelAreEachChargedOnceAfterRepair() throws Exception {
    Fixture f = new Fixture(env, "repair-unread");
    List<String> lost = new CopyOnWriteArrayList<>();
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer("billing").batchSize(20).listener(lostInto(lost)).build()) {
      List<UUID> all = ids(TransportSide.append(env, f.topic, 120, i -> "charge-" + i));
      TransportSide.publishAll(env, relay);
      // 20 handled before the deletion: the group's last-delivered ID is in the middle of the stream.
      f.createGroupAtStart("billing");
      assertThat(consumer.pollOnce().handled()).isEqualTo(20);
      List<String> entryIds = entryIds(f);
      for (int i = 21; i < 120; i += 2) {
        f.redis.xdel(f.streamKey(), new StreamEntryID(entryIds.get(i))); // 50 the group had not read
      }
      assertThat(f.redis.xlen(f.streamKey())).isEqualTo(70);

      RepairReport report = repair().repair(f.topic, false);
      assertThat(report.rowsReset()).isEqualTo(50);
      assertThat(report.acknowledged()).isZero();
      assertThat(report.unrecoverable()).isZero();
      TransportSide.publishAll(env, relay);
      assertThat(f.redis.xlen(f.streamKey())).isEqualTo(120);
      TransportSide.drain(TransportSide.of(consumer));

      for (UUID id : all) {
        assertThat(f.effectCount("billing", id)).as("message %s", id).isEqualTo(1);
      }
      assertThat(f.effectCount("billing")).as("all 120, each charged once").isEqualTo(120);
      assertThat(f.doubleEffects("billing")).isZero();
      assertThat(f.pendingTotal("billing")).isZero();
      assertThat(lost).isEmpty();
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'billing'")).isZero();
    }
  }

  @Test
  void aPendingEntryWhoseBodyWasDeletedBeforeItsAckIsRepublishedHandledOnceAndLeavesNothingPending()
      throws Exception {
    Fixture f = new Fixture(env, "repair-pending");
    List<String> lost = new CopyOnWriteArrayList<>();
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer("billing").minIdle(Duration.ofMillis(200)).listener(lostInto(lost))
            .build()) {
      List<UUID> all = ids(TransportSide.append(env, f.topic, 10, i -> "charge-" + i));
      TransportSide.publishAll(env, relay);
      f.createGroupAtStart("billing");
      // Delivered to a consumer that died before its ack; then two of the five deleted from the stream.
      f.redis.xreadGroup("billing", "died", XReadGroupParams.xReadGroupParams().count(5),
          Map.of(f.streamKey(), StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      List<String> entryIds = entryIds(f);
      f.redis.xdel(f.streamKey(), new StreamEntryID(entryIds.get(1)), new StreamEntryID(entryIds.get(3)));

      RepairReport report = repair().repair(f.topic, false);
      RepairReport.ShardRepair s = report.shards().get(0);
      assertThat(s.rowsReset()).hasSize(2);
      assertThat(s.acknowledged()).isEqualTo(Map.of("billing", 2));
      assertThat(s.unrecoverable()).isEmpty();
      assertThat(f.pendingTotal("billing")).as("the three whose bodies are there stay pending").isEqualTo(3);
      TransportSide.publishAll(env, relay);

      ConsumerTestKit.await("all ten handled", Duration.ofSeconds(20), () -> {
        consumer.pollOnce();
        return f.effectCount("billing") >= 10 && f.pendingTotal("billing") == 0;
      });
      for (UUID id : all) {
        assertThat(f.effectCount("billing", id)).as("message %s", id).isEqualTo(1);
      }
      assertThat(f.effectCount("billing")).isEqualTo(10);
      assertThat(f.pendingTotal("billing")).isZero();
      assertThat(lost).as("no gone entry is reported lost: repair acknowledged them").isEmpty();
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = 'billing'")).isZero();
    }
  }

  private StreamRepair repair() {
    return StreamRepair.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .build();
  }

  private static ConsumerListener lostInto(List<String> lost) {
    return new ConsumerListener() {
      @Override
      public void lost(String streamKey, String streamId) {
        lost.add(streamId);
      }
    };
  }

  /** The stream's entry IDs, in order. */
  private static List<String> entryIds(Fixture f) {
    List<String> out = new ArrayList<>();
    for (Object o : f.redis.xrange(f.streamKey().getBytes(StandardCharsets.UTF_8),
        "-".getBytes(StandardCharsets.UTF_8), "+".getBytes(StandardCharsets.UTF_8), 10_000)) {
      out.add(new String((byte[]) ((List<?>) o).get(0), StandardCharsets.UTF_8));
    }
    return out;
  }

  private static List<UUID> ids(List<AppendedMessage> appended) {
    return appended.stream().map(AppendedMessage::messageId).toList();
  }
}
