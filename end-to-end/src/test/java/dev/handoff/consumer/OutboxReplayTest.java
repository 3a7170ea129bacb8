package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.Transport;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.params.XReadGroupParams;

/**
 * Replay from the outbox, on both transports: rows go through the consumer's own path (marker, handler, commit)
 * whatever the streams or lists still hold, already processed ones change nothing, new ones are handled once, a
 * poison message is reported and nothing is dead-lettered, and purged history is counted, never passed off as
 * "nothing to do".
 */
@HandoffTest
class OutboxReplayTest {

  private final TestEnvironment env;

  OutboxReplayTest(TestEnvironment env) {
    this.env = env;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aStreamTrimmedToNothingReplaysFromTheOutboxAsDuplicatesOnly(Transport transport) throws Exception {
    Fixture f = new Fixture(env, "gone-" + transport.name().toLowerCase());
    String group = "gone-" + transport.name().toLowerCase();
    List<UUID> ids = ids(append(f.topic, 60, i -> "ok"));
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide consumer = side(transport, f, group, f.effect(group, null))) {
      TransportSide.publishAll(env, relay);
      TransportSide.drain(consumer);
      relay.maintainOnce(); // trims what the group finished, to the stream's node boundary
      if (transport == Transport.STREAM) {
        env.redis().xtrim(StreamFormat.streamKey(env.keyPrefix(), f.topic, 0), 0, false); // and the rest
      }
      assertThat(retained(f, transport)).isZero();

      ReplayResult r = consumer.assertReplayChangesNothing(OutboxRange.all());

      assertThat(r.offered()).isEqualTo(60);
      assertThat(r.duplicates()).isEqualTo(60);
      assertThat(r.handled()).isZero();
      assertThat(r.failed()).isZero();
      assertThat(r.complete()).isTrue();
      assertThat(f.effectCount(group)).isEqualTo(60);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(consumer.processed(ids)).containsExactlyInAnyOrderElementsOf(ids);
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aGroupThatNeverSawTheRangeHandlesEachMessageOnceAndASecondReplayNone(Transport transport) throws Exception {
    Fixture f = new Fixture(env, "fresh-" + transport.name().toLowerCase());
    String group = "fresh-" + transport.name().toLowerCase();
    List<AppendedMessage> appended = append(f.topic, 40, i -> "ok");
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide fresh = side(transport, f, group, f.effect(group, null))) {
      TransportSide.publishAll(env, relay);

      ReplayResult first = fresh.replayFromOutbox(OutboxRange.all());
      ReplayResult second = fresh.replayFromOutbox(OutboxRange.all());

      assertThat(first.handled()).isEqualTo(40);
      assertThat(first.duplicates()).isZero();
      assertThat(first.complete()).isTrue();
      assertThat(second.handled()).isZero();
      assertThat(second.duplicates()).isEqualTo(40);
      assertThat(f.effectCount(group)).isEqualTo(40);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group, "processed")).isEqualTo(40);

      // the range's bounds select exactly their rows
      long firstId = appended.get(0).outboxId();
      assertThat(fresh.replayFromOutbox(OutboxRange.ids(firstId + 10, firstId + 19)).offered()).isEqualTo(10);
      assertThat(fresh.replayFromOutbox(OutboxRange.key("k7")).offered()).isEqualTo(1);
      assertThat(fresh.replayFromOutbox(OutboxRange.all().withKey("k7").withIds(firstId + 8, firstId + 39))
          .offered()).isZero();
      ReplayResult named = fresh.replayFromOutbox(OutboxRange.messageIds(
          List.of(appended.get(3).messageId(), appended.get(5).messageId(), UUID.randomUUID())));
      assertThat(named.offered()).isEqualTo(2);
      assertThat(named.missing()).isEqualTo(1);
      assertThat(named.complete()).isFalse();
      assertThat(named.toString()).contains("1 message ID(s) not in the outbox");
      Instant now = Instant.now();
      assertThat(fresh.replayFromOutbox(OutboxRange.appendedBetween(now.minusSeconds(600), now.plusSeconds(600)))
          .duplicates()).isEqualTo(40);
      assertThat(fresh.replayFromOutbox(OutboxRange.appendedSince(now.plusSeconds(600))).offered()).isZero();
      assertThat(f.effectCount(group)).isEqualTo(40);
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aPoisonMessageInTheRangeIsReportedTheRestProcessedAndNothingDeadLettered(Transport transport)
      throws Exception {
    Fixture f = new Fixture(env, "poison-" + transport.name().toLowerCase());
    String group = "poison-" + transport.name().toLowerCase();
    List<AppendedMessage> appended = append(f.topic, 25, i -> i == 12 ? "poison" : "ok");
    MessageHandler effect = f.effect(group, null);
    MessageHandler handler = (tx, m) -> {
      if (m.payloadAsString().equals("poison")) {
        throw new IllegalArgumentException("cannot charge " + m.key());
      }
      effect.handle(tx, m);
    };
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide consumer = side(transport, f, group, handler)) {
      TransportSide.publishAll(env, relay);

      ReplayResult r = consumer.replayFromOutbox(OutboxRange.all());

      assertThat(r.offered()).isEqualTo(25);
      assertThat(r.handled()).isEqualTo(24);
      assertThat(r.failed()).isEqualTo(1);
      assertThat(r.failures()).hasSize(1);
      assertThat(r.failures().get(0).messageId()).isEqualTo(appended.get(12).messageId());
      assertThat(r.failures().get(0).outboxId()).isEqualTo(appended.get(12).outboxId());
      assertThat(r.failures().get(0).error()).hasMessage("cannot charge k12");
      assertThat(r.toString()).contains("1 failed").contains(appended.get(12).messageId().toString());
      assertThat(f.effectCount(group)).isEqualTo(24);
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter WHERE consumer_group = ?", group)).isZero();
      assertThat(f.inboxCount(group)).isEqualTo(24);
      assertThatThrownBy(() -> consumer.assertReplayChangesNothing(OutboxRange.all()))
          .isInstanceOf(AssertionError.class).hasMessageContaining("1 failed");
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aReplayConcurrentWithTheRunningConsumerHandlesEachMessageOnce(Transport transport) throws Exception {
    Fixture f = new Fixture(env, "live-" + transport.name().toLowerCase());
    String group = "live-" + transport.name().toLowerCase();
    int n = 3_000;
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.addAll(ids(append(f.topic, n / 3, j -> "ok")));
    }
    AtomicLong consumerHandled = new AtomicLong();
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide live = side(transport, f, group, f.effect(group, null), consumerHandled);
        TransportSide replayer = side(transport, f, group, f.effect(group, null))) {
      TransportSide.publishAll(env, relay);
      live.start();
      CompletableFuture<ReplayResult> replay = CompletableFuture.supplyAsync(
          () -> replayer.replayFromOutbox(OutboxRange.all()));
      ReplayResult r = replay.get();
      live.awaitProcessed(ids, Duration.ofSeconds(60));
      live.awaitDrained(Duration.ofSeconds(60));

      assertThat(r.offered()).isEqualTo(n);
      assertThat(r.handled() + r.duplicates()).isEqualTo(n);
      assertThat(r.handled() + consumerHandled.get()).isEqualTo(n);
      assertThat(f.effectCount(group)).isEqualTo(n);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(f.inboxCount(group, "processed")).isEqualTo(n);
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aRangeReachingIntoPurgedHistorySaysHowManyRowsAreGone(Transport transport) throws Exception {
    Fixture f = new Fixture(env, "purged-" + transport.name().toLowerCase());
    String group = "purged-" + transport.name().toLowerCase();
    List<AppendedMessage> old = append(f.topic, 30, i -> "ok");
    try (Relay purging = TransportSide.relay(env, f.topic, transport).outboxRetention(Duration.ofMillis(1))
            .build();
        TransportSide consumer = side(transport, f, group, f.effect(group, null))) {
      TransportSide.publishAll(env, purging);
      TransportSide.drain(consumer);
      TransportSide.awaitDatabaseClockPast(env, Duration.ofMillis(5));
      purging.maintainOnce();
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", f.topic)).isZero();

      List<AppendedMessage> recent = append(f.topic, 10, i -> "ok");
      TransportSide.publishAll(env, purging);
      TransportSide.drain(consumer);

      ReplayResult all = consumer.replayFromOutbox(OutboxRange.all());
      assertThat(all.offered()).isEqualTo(10);
      assertThat(all.duplicates()).isEqualTo(10);
      assertThat(all.purged()).isEqualTo(30);
      assertThat(all.possiblyPurged()).isZero();
      assertThat(all.complete()).isFalse();
      assertThat(all.toString()).contains("30 row(s) of the range were purged");

      long firstOld = old.get(0).outboxId();
      ReplayResult partOfABatch = consumer.replayFromOutbox(OutboxRange.ids(firstOld, firstOld + 4));
      assertThat(partOfABatch.offered()).isZero();
      assertThat(partOfABatch.purged()).isZero();
      assertThat(partOfABatch.possiblyPurged()).isEqualTo(30);

      ReplayResult onlyRecent = consumer.replayFromOutbox(
          OutboxRange.ids(recent.get(0).outboxId(), recent.get(9).outboxId()));
      assertThat(onlyRecent.complete()).isTrue();
      assertThat(onlyRecent.duplicates()).isEqualTo(10);

      assertThatThrownBy(() -> consumer.assertReplayChangesNothing(OutboxRange.all()))
          .isInstanceOf(AssertionError.class).hasMessageContaining("30 row(s) of the range were purged");
      assertThat(f.effectCount(group)).isEqualTo(40);
    }
  }

  @Test
  void aReplayFromTheOutboxLeavesTheStreamAndItsGroupsUntouched() throws Exception {
    Fixture f = new Fixture(env, "untouched");
    String group = "untouched";
    String key = StreamFormat.streamKey(env.keyPrefix(), f.topic, 0);
    List<UUID> ids = ids(append(f.topic, 30, i -> "ok"));
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.STREAM).build();
        StreamConsumer consumer = f.consumer(group).handler(f.effect(group, null)).batchSize(10).build()) {
      TransportSide.publishAll(env, relay);
      // 10 processed and acknowledged, 5 read by another consumer and pending, 15 never delivered
      assertThat(consumer.pollOnce().handled()).isEqualTo(10);
      env.redis().xreadGroup(group, "other-0", XReadGroupParams.xReadGroupParams().count(5),
          Map.of(key, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
      List<Map<String, Object>> groupsBefore = groups(key);
      assertThat(groupsBefore).singleElement().satisfies(g -> {
        assertThat(g).containsEntry("pending", 5L).containsEntry("entries-read", 15L).containsEntry("lag", 15L);
      });
      List<String> pendingBefore = pendingOwners(key, group);
      long lengthBefore = env.redis().xlen(key);

      ReplayResult r = consumer.replayFromOutbox(OutboxRange.all());

      assertThat(r.offered()).isEqualTo(30);
      assertThat(r.handled()).as("the 20 rows the group had not processed").isEqualTo(20);
      assertThat(r.duplicates()).isEqualTo(10);
      assertThat(consumer.processed(ids)).containsExactlyInAnyOrderElementsOf(ids);
      assertThat(groups(key)).as("XINFO GROUPS").isEqualTo(groupsBefore);
      assertThat(pendingOwners(key, group)).as("XPENDING").isEqualTo(pendingBefore);
      assertThat(env.redis().xlen(key)).as("XLEN").isEqualTo(lengthBefore).isEqualTo(30);
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aReplayFromTheOutboxCommitsOnePagePerTransaction(Transport transport) throws Exception {
    Fixture f = new Fixture(env, "paged-" + transport.name().toLowerCase());
    String group = "paged-" + transport.name().toLowerCase();
    // OutboxReplay reads and settles a page of batchSize rows per transaction: 25 rows in pages of 10 are 3 pages.
    int pageSize = 10;
    List<AppendedMessage> appended = append(f.topic, 25, i -> "ok");
    Map<UUID, Long> txidOf = new ConcurrentHashMap<>();
    MessageHandler effect = f.effect(group, null);
    MessageHandler recording = (tx, m) -> {
      try (var ps = tx.prepareStatement("SELECT txid_current()"); var rs = ps.executeQuery()) {
        rs.next();
        txidOf.put(m.messageId(), rs.getLong(1));
      }
      effect.handle(tx, m);
    };
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide consumer = transport == Transport.STREAM
            ? TransportSide.of(f.consumer(group).handler(recording).batchSize(pageSize).build())
            : TransportSide.of(TransportSide.listConsumer(env, f, group).handler(recording).batchSize(pageSize)
                .build())) {
      TransportSide.publishAll(env, relay);

      ReplayResult r = consumer.replayFromOutbox(OutboxRange.all());

      assertThat(r.handled()).isEqualTo(25);
    }
    assertThat(txidOf).hasSize(25);
    assertThat(Set.copyOf(txidOf.values())).as("distinct transactions").hasSize(3);
    List<Long> inOutboxOrder = appended.stream().map(a -> txidOf.get(a.messageId())).toList();
    for (int page = 0; page * pageSize < inOutboxOrder.size(); page++) {
      List<Long> txids = inOutboxOrder.subList(page * pageSize, Math.min(inOutboxOrder.size(),
          (page + 1) * pageSize));
      assertThat(Set.copyOf(txids)).as("transactions of page %d", page).hasSize(1);
    }
    assertThat(f.effectCount(group)).isEqualTo(25);
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aHundredThousandRowsReplayInPagesWithFlatHeapAndExactCounts(Transport transport) {
    Fixture f = new Fixture(env, "big-" + transport.name().toLowerCase());
    String group = "big-" + transport.name().toLowerCase();
    int rows = 100_000;
    // Rows as the relay leaves them (published, with stream IDs), each with a 1 KiB payload: holding them all
    // would take over 100 MB of heap.
    env.execute("INSERT INTO outbox (message_id, topic, shard, message_key, type, payload, stream_ms, stream_seq,"
        + " published_at) SELECT gen_random_uuid(), '" + f.topic + "', 0, 'k' || g, 'test.event',"
        + " convert_to(repeat('x', 1024), 'UTF8'), 1, g, now() FROM generate_series(1, " + rows + ") g");
    List<Long> heapAfterGc = new ArrayList<>();
    AtomicLong handled = new AtomicLong();
    ConsumerListener sampling = new ConsumerListener() {
      @Override
      public void replayProgress(ReplayResult soFar) {
        if (soFar.offered() % 10_000 == 0) {
          System.gc();
          heapAfterGc.add(java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
      }
    };
    MessageHandler counting = (tx, m) -> handled.incrementAndGet();
    StreamConsumer streams = transport == Transport.STREAM
        ? f.consumer(group).handler(counting).batchSize(1_000).listener(sampling).build() : null;
    ListConsumer lists = transport == Transport.LIST
        ? ListConsumer.builder(env.dataSource(), RedisConnectionSpec.of(f.redisUri)).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic(f.topic).group(group).handler(counting).batchSize(1_000).listener(sampling).build() : null;
    try {
      ReplayResult r = streams != null ? streams.replayFromOutbox(OutboxRange.all())
          : lists.replayFromOutbox(OutboxRange.all());

      assertThat(r.offered()).isEqualTo(rows);
      assertThat(r.handled()).isEqualTo(rows);
      assertThat(handled.get()).isEqualTo(rows);
      assertThat(f.inboxCount(group, "processed")).isEqualTo(rows);
      assertThat(heapAfterGc).hasSize(10);
      long first = heapAfterGc.get(0);
      long max = heapAfterGc.stream().mapToLong(Long::longValue).max().orElseThrow();
      System.out.printf("replay of %,d rows (%s): heap after GC %s MiB%n", rows, transport,
          heapAfterGc.stream().map(b -> Long.toString(b >> 20)).toList());
      assertThat(max - first).as("heap growth after GC over the replay, bytes").isLessThan(24L << 20);
    } finally {
      if (streams != null) {
        streams.close();
      }
      if (lists != null) {
        lists.close();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void aReplayAnOperatorRequestsIsRunByTheRunningConsumerOnceAndWritesNothingToRedis(Transport transport)
      throws Exception {
    Fixture f = new Fixture(env, "requested-" + transport.name().toLowerCase());
    String group = "requested-" + transport.name().toLowerCase();
    List<UUID> ids = ids(append(f.topic, 30, i -> "ok"));
    DeadLetterAdmin admin = DeadLetterAdmin.builder(env.dataSource()).schema(env.schema()).build();
    try (Relay relay = TransportSide.relay(env, f.topic, transport).build();
        TransportSide consumer = side(transport, f, group, f.effect(group, null))) {
      TransportSide.publishAll(env, relay);
      TransportSide.drain(consumer);
      assertThat(f.effectCount(group)).isEqualTo(30);
      // The database loses 10 of the group's commits after Redis was told they were done (a failover to a standby
      // that lacked them): their markers and effects are gone, their entries acknowledged.
      List<UUID> lost = ids.subList(0, 10);
      for (UUID id : lost) {
        env.execute("DELETE FROM inbox WHERE consumer_group = '" + group + "' AND message_id = '" + id + "'",
            "DELETE FROM " + f.effects + " WHERE consumer_group = '" + group + "' AND message_id = '" + id + "'");
      }
      long retainedBefore = retained(f, transport);

      long request = admin.requestReplay(group, f.topic, Instant.now().minus(Duration.ofHours(1)), null);
      assertThat(admin.replayRequest(request).orElseThrow().finishedAt()).as("not run before a consumer runs it")
          .isNull();
      assertThat(consumer.consumer().maintainOnce()).isEqualTo(1);

      DeadLetterAdmin.ReplayRequest done = admin.replayRequest(request).orElseThrow();
      assertThat(done.finishedAt()).isNotNull();
      assertThat(done.handled()).isEqualTo(10);
      assertThat(done.duplicates()).isEqualTo(20);
      assertThat(done.failed()).isZero();
      assertThat(f.effectCount(group)).isEqualTo(30);
      assertThat(f.doubleEffects(group)).isZero();
      assertThat(consumer.processed(ids)).containsExactlyInAnyOrderElementsOf(ids);
      assertThat(retained(f, transport)).as("nothing written to Redis").isEqualTo(retainedBefore);
      assertThat(consumer.consumer().maintainOnce()).as("run once").isZero();
    }
  }

  // ---------------------------------------------------------------------------------------------------------------

  private TransportSide side(Transport transport, Fixture f, String group, MessageHandler handler) {
    return side(transport, f, group, handler, new AtomicLong());
  }

  private TransportSide side(Transport transport, Fixture f, String group, MessageHandler handler,
      AtomicLong handled) {
    ConsumerListener counting = new ConsumerListener() {
      @Override
      public void handled(InboundMessage message) {
        handled.incrementAndGet();
      }
    };
    return transport == Transport.STREAM
        ? TransportSide.of(f.consumer(group).handler(handler).batchSize(100).listener(counting).build())
        : TransportSide.of(TransportSide.listConsumer(env, f, group).handler(handler).batchSize(100)
            .listener(counting).build());
  }

  /** XINFO GROUPS of a stream, each group as Redis reports it (pending, last-delivered-id, entries-read, lag...). */
  private List<Map<String, Object>> groups(String key) {
    return env.redis().xinfoGroups(key).stream()
        .<Map<String, Object>>map(g -> new TreeMap<>(g.getGroupInfo())).toList();
  }

  /** XPENDING of a group: each entry's ID, owner and delivery count (not its idle time, which grows). */
  private List<String> pendingOwners(String key, String group) {
    return env.redis().xpending(key, group, XPendingParams.xPendingParams("-", "+", 1_000)).stream()
        .map(p -> p.getID() + " " + p.getConsumerName() + " " + p.getDeliveredTimes()).toList();
  }

  private long retained(Fixture f, Transport transport) {
    return transport == Transport.STREAM ? env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), f.topic, 0))
        : env.redis().llen(ListFormat.listKey(env.keyPrefix(), f.topic, 0));
  }

  private List<AppendedMessage> append(String topic, int n, IntFunction<String> payload) throws Exception {
    return TransportSide.append(env, topic, n, payload);
  }

  private static List<UUID> ids(List<AppendedMessage> appended) {
    return appended.stream().map(AppendedMessage::messageId).toList();
  }
}
