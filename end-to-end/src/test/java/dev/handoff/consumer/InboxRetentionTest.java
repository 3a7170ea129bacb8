package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.Transport;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.KillSwitch;
import dev.handoff.testkit.SimulatedCrash;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Inbox retention: markers past the dedup window go, in batches, but never one whose message can still come back,
 * because Redis (a stream or list) or the outbox still holds it; a window shorter than the outbox retention is
 * refused when configured; and a replay from the outbox after a purge charges nothing twice.
 */
@HandoffTest
class InboxRetentionTest {

  private static final Duration PAST_THE_WINDOW = Duration.ofDays(9);

  private final TestEnvironment env;

  InboxRetentionTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aDedupWindowShorterThanTheOutboxRetentionIsRefusedWhenConfigured() {
    assertThatThrownBy(() -> InboxRetention.defaults().withDedupWindow(Duration.ofDays(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("dedupWindow must be at least the outbox retention (PT168H), was PT24H");
    assertThatThrownBy(() -> new InboxRetention(Duration.ofHours(1), Duration.ofHours(2), Duration.ofMinutes(1),
        true)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dedupWindow");
    InboxRetention d = InboxRetention.defaults();
    assertThat(d.outboxRetention()).isEqualTo(Duration.ofDays(7));
    assertThat(d.dedupWindow()).isEqualTo(Duration.ofDays(8));
    assertThat(d.automatic()).isTrue();
    assertThat(InboxRetention.forOutboxRetention(Duration.ofDays(2)).dedupWindow()).isEqualTo(Duration.ofDays(3));
  }

  @Test
  void thePurgeRemovesOnlyMarkersPastTheWindowOnceRedisNoLongerHoldsThem() {
    Fixture f = new Fixture(env, "window");
    List<StreamMessage> messages = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      messages.add(f.message());
      f.publish(messages.get(i));
    }
    try (StreamConsumer consumer = f.consumer("w").build()) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      age("w", messages.subList(0, 6).stream().map(StreamMessage::messageId).toList());

      // the stream still holds them all: nothing may go
      InboxPurgeResult held = consumer.purgeInbox();
      assertThat(held.deleted()).isZero();
      assertThat(held.keptForRedis()).isEqualTo(6);
      assertThat(held.keptForOutbox()).isZero();
      assertThatThrownBy(() -> consumer.purgeInbox(Instant.now().minus(Duration.ofDays(8))))
          .isInstanceOf(InboxPurgeRefusedException.class).hasMessageContaining("6 marker(s)")
          .hasMessageContaining("still retained in Redis");

      env.redis().xtrim(f.streamKey(), 0, false);
      InboxPurgeResult purged = consumer.purgeInbox();

      assertThat(purged.deleted()).isEqualTo(6);
      assertThat(purged.keptAny()).isFalse();
      assertThat(f.inboxCount("w")).isEqualTo(4);
      for (StreamMessage m : messages.subList(6, 10)) {
        assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'w' AND message_id = ?",
            m.messageId())).as("a marker inside the window").isEqualTo(1);
      }
      assertThat(consumer.purgeInbox().deleted()).isZero();
    }
  }

  @Test
  void onTheListTransportThePurgeKeepsMarkersWhoseMessagesTheListOrAProcessingListStillHolds() throws Exception {
    Fixture f = new Fixture(env, "list-window");
    String list = ListFormat.listKey(env.keyPrefix(), f.topic, 0);
    String doomedProcessing = ListFormat.processingKey(list, "doomed-0");
    MessageHandler effect = f.effect("lw", null);
    try (Relay relay = TransportSide.relay(env, f.topic, Transport.LIST).outboxRetention(Duration.ofMillis(1))
            .build();
        ListConsumer survivor = TransportSide.listConsumer(env, f, "lw").consumerName("survivor").batchSize(2)
            .handler(effect).build()) {
      // rows 0-5: consumed and acknowledged
      List<UUID> ids = new ArrayList<>(append(null, f.topic, 6));
      TransportSide.publishAll(env, relay);
      TransportSide.drain(TransportSide.of(survivor));
      // rows 6-7: committed by a consumer that died before its LREM, so they stay in its processing list (its long
      // heartbeat keeps the survivor's reaper off them until the test lets it go)
      ids.addAll(append(null, f.topic, 2));
      TransportSide.publishAll(env, relay);
      KillSwitch process = ConsumerTestKit.killSwitch(point -> {
        if (point == ConsumerFaults.Point.AFTER_COMMIT) {
          throw new SimulatedCrash("after commit, before LREM");
        }
      });
      ListConsumer doomed = TransportSide.listConsumer(env, f, "lw")
          .consumerName("doomed").batchSize(2).heartbeatTtl(Duration.ofSeconds(60))
          .heartbeatInterval(Duration.ofSeconds(10)).handler(effect).faults(process).build();
      assertThatThrownBy(doomed::pollOnce).isInstanceOf(SimulatedCrash.class);
      process.kill();
      assertThat(env.redis().llen(doomedProcessing)).isEqualTo(2);
      // rows 8-9: consumed, then row 8 pushed again (a duplicate push) and not yet taken
      ids.addAll(append(null, f.topic, 2));
      TransportSide.publishAll(env, relay);
      byte[] element8 = env.redis().lindex(list.getBytes(StandardCharsets.UTF_8), 0);
      TransportSide.drain(TransportSide.of(survivor));
      env.redis().rpush(list.getBytes(StandardCharsets.UTF_8), element8);
      assertThat(f.inboxCount("lw", "processed")).isEqualTo(10);
      // the outbox no longer holds any of them, so only the Redis rule can keep a marker
      TransportSide.awaitDatabaseClockPast(env, Duration.ofMillis(5));
      relay.maintainOnce();
      assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", f.topic)).isZero();
      age("lw", ids);
      Instant pastTheWindow = Instant.now().minus(Duration.ofDays(8));

      // 1. the processing list holds rows 6-7 (the list holds row 8): rows 6-9 must stay
      assertThatThrownBy(() -> survivor.purgeInbox(pastTheWindow))
          .isInstanceOf(InboxPurgeRefusedException.class).hasMessageContaining("4 marker(s)")
          .hasMessageContaining("still retained in Redis");
      assertThat(f.inboxCount("lw")).isEqualTo(10);
      InboxPurgeResult whileProcessing = survivor.purgeInbox();
      assertThat(whileProcessing.deleted()).isEqualTo(6);
      assertThat(whileProcessing.keptForRedis()).isEqualTo(4);
      assertThat(whileProcessing.keptForOutbox()).isZero();
      assertThat(markers("lw", ids)).containsExactlyInAnyOrderElementsOf(ids.subList(6, 10));

      // 2. the dead consumer's elements are reaped and taken as duplicates; the list still holds row 8
      assertThat(env.redis().del(ListFormat.heartbeatKey(doomedProcessing))).isEqualTo(1);
      assertThat(survivor.pollOnce().duplicates()).isEqualTo(2);
      assertThat(env.redis().llen(doomedProcessing)).isZero();
      assertThat(env.redis().llen(list)).isEqualTo(1);
      assertThatThrownBy(() -> survivor.purgeInbox(pastTheWindow))
          .isInstanceOf(InboxPurgeRefusedException.class).hasMessageContaining("2 marker(s)")
          .hasMessageContaining("still retained in Redis");
      InboxPurgeResult whileListed = survivor.purgeInbox();
      assertThat(whileListed.deleted()).isEqualTo(2);
      assertThat(whileListed.keptForRedis()).isEqualTo(2);
      assertThat(whileListed.keptForOutbox()).isZero();
      assertThat(markers("lw", ids)).containsExactlyInAnyOrderElementsOf(ids.subList(8, 10));

      // 3. the duplicate is taken and acknowledged: Redis holds nothing, the last markers go
      assertThat(survivor.pollOnce().duplicates()).isEqualTo(1);
      assertThat(env.redis().llen(list)).isZero();
      InboxPurgeResult drained = survivor.purgeInbox();
      assertThat(drained.deleted()).isEqualTo(2);
      assertThat(drained.keptAny()).isFalse();
      assertThat(f.inboxCount("lw")).isZero();
      doomed.close(); // frees the frozen consumer's thread and connections
    }
    assertThat(f.effectCount("lw")).isEqualTo(10);
    assertThat(f.doubleEffects("lw")).isZero();
  }

  @Test
  void theAutomaticPurgeOfAMissingStreamDeletesNothingAndSaysItStoppedAtRedis() {
    Fixture f = new Fixture(env, "missing");
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      StreamMessage m = f.message();
      ids.add(m.messageId());
      f.publish(m);
    }
    try (StreamConsumer consumer = f.consumer("ms").build()) {
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));
      age("ms", ids);
      // Redis lost the stream (or someone deleted it): the relay may publish its messages again
      assertThat(env.redis().del(f.streamKey())).isEqualTo(1);

      InboxPurgeResult r = consumer.purgeInbox();

      assertThat(r.deleted()).isZero();
      assertThat(r.keptForRedis()).as("-1: the purge stopped at the Redis check").isEqualTo(-1);
      assertThat(r.keptForOutbox()).isZero();
      assertThat(r.keptAny()).isTrue();
      assertThat(f.inboxCount("ms")).isEqualTo(3);
      assertThatThrownBy(() -> consumer.purgeInbox(Instant.now().minus(Duration.ofDays(8))))
          .isInstanceOf(InboxPurgeRefusedException.class).hasMessageContaining("does not exist");
      assertThat(f.inboxCount("ms")).isEqualTo(3);
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void thePurgeKeepsMarkersWhoseMessagesTheOutboxStillHoldsAndAReplayAfterItChargesNothingTwice(Transport transport)
      throws Exception {
    Fixture f = new Fixture(env, "interlock-" + transport.name().toLowerCase());
    String group = "i-" + transport.name().toLowerCase();
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Relay relay = TransportSide.relay(env, f.topic, transport).outboxRetention(Duration.ofMillis(1))
            .build();
        TransportSide consumer = side(transport, f, group)) {
      // old: consumed, then purged from the outbox by the relay's retention
      List<UUID> old = append(outbox, f.topic, 20);
      TransportSide.publishAll(env, relay);
      TransportSide.drain(consumer);
      TransportSide.awaitDatabaseClockPast(env, Duration.ofMillis(5));
      relay.maintainOnce();
      // recent: consumed, still in the outbox
      List<UUID> recent = append(outbox, f.topic, 10);
      TransportSide.publishAll(env, relay);
      TransportSide.drain(consumer);
      emptyRedis(f, transport);
      age(group, old);
      age(group, recent); // past the window too, as if the outbox purge had fallen behind

      InboxPurgeResult r = consumer.purgeInbox();

      assertThat(r.deleted()).as("markers of messages the outbox no longer holds").isEqualTo(20);
      assertThat(r.keptForOutbox()).as("markers of messages the outbox still holds").isEqualTo(10);
      assertThat(r.keptForRedis()).isZero();
      assertThat(f.inboxCount(group)).isEqualTo(10);
      assertThatThrownBy(() -> consumer.purgeInbox(Instant.now().plus(Duration.ofDays(1))))
          .isInstanceOf(InboxPurgeRefusedException.class).hasMessageContaining("the outbox still holds");

      ReplayResult replay = consumer.replayFromOutbox(OutboxRange.all());

      assertThat(replay.duplicates()).isEqualTo(10);
      assertThat(replay.handled()).isZero();
      assertThat(replay.purged()).isEqualTo(20);
      assertThat(f.effectCount(group)).isEqualTo(30);
      assertThat(f.doubleEffects(group)).isZero();
    }
  }

  @Test
  void aStartedConsumerPurgesByItselfOffTheMessagePath() {
    Fixture f = new Fixture(env, "auto");
    for (int i = 0; i < 25; i++) {
      f.publish(f.message());
    }
    // The consumer's clock runs 9 days ahead: every marker it writes is past its 8-day window at once.
    Clock ahead = Clock.offset(Clock.systemUTC(), PAST_THE_WINDOW);
    try (StreamConsumer consumer = f.consumer("auto").clock(ahead)
        .inboxRetention(InboxRetention.defaults().withPurgeInterval(Duration.ofMillis(50))).build()) {
      consumer.start();
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(20));
      assertThat(f.effectCount("auto")).isEqualTo(25);
      env.redis().xtrim(f.streamKey(), 0, false);
      ConsumerTestKit.await("the automatic purge removed every marker", Duration.ofSeconds(20),
          () -> f.inboxCount("auto") == 0);
    }
    assertThat(f.effectCount("auto")).isEqualTo(25);
  }

  // ---------------------------------------------------------------------------------------------------------------

  private TransportSide side(Transport transport, Fixture f, String group) {
    return transport == Transport.STREAM
        ? TransportSide.of(f.consumer(group).handler(f.effect(group, null)).build())
        : TransportSide.of(TransportSide.listConsumer(env, f, group).handler(f.effect(group, null)).build());
  }

  /** Makes these markers look processed {@link #PAST_THE_WINDOW} ago. */
  private void age(String group, List<UUID> ids) {
    for (UUID id : ids) {
      env.queryLong("WITH u AS (UPDATE inbox SET processed_at = now() - interval '9 days'"
          + " WHERE consumer_group = ? AND message_id = ? RETURNING 1) SELECT count(*) FROM u", group, id);
    }
  }

  /** What a drained topic looks like in Redis once trimmed: a stream holds nothing; a list holds nothing anyway. */
  private void emptyRedis(Fixture f, Transport transport) {
    if (transport == Transport.STREAM) {
      env.redis().xtrim(StreamFormat.streamKey(env.keyPrefix(), f.topic, 0), 0, false);
    } else {
      assertThat(env.redis().llen(ListFormat.listKey(env.keyPrefix(), f.topic, 0))).isZero();
    }
  }

  /** Which of {@code ids} still have a marker in {@code group}. */
  private List<UUID> markers(String group, List<UUID> ids) {
    List<UUID> out = new ArrayList<>();
    for (UUID id : ids) {
      if (env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ? AND message_id = ?", group, id) > 0) {
        out.add(id);
      }
    }
    return out;
  }

  private List<UUID> append(Outbox outbox, String topic, int n) throws Exception {
    return TransportSide.append(env, topic, n, i -> "ok").stream().map(a -> a.messageId()).toList();
  }
}
