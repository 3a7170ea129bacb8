package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayListener;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * Consumers after Redis lost data, with the real relay re-publishing: where handoff recovers by itself, and the
 * one loss it cannot see (a list deleted by hand while its bookkeeping hash stayed), with the recovery for it.
 */
@HandoffTest
class RedisLossBoundaryTest {

  private final TestEnvironment env;

  RedisLossBoundaryTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aGroupStartedAtNewEntriesOnlyIsRecreatedFromTheBeginningAfterNogroupSoRepublishedMessagesAreNotSkipped()
      throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    Fixture f = new Fixture(env, "tail-loss", redis, server.uri());
    List<String> recreated = new CopyOnWriteArrayList<>();
    try (Relay relay = relay(redis, f.topic).build();
        StreamConsumer consumer = f.consumer("tail").startPosition(StartPosition.NEW_ENTRIES_ONLY)
            .listener(new ConsumerListener() {
              @Override
              public void groupRecreated(String streamKey) {
                recreated.add(streamKey);
              }
            }).build()) {
      assertThat(consumer.pollOnce().read()).isZero(); // creates the group at the end of the stream
      List<UUID> handled = ids(TransportSide.append(env, f.topic, 3, i -> "a" + i));
      publishAll(relay, f.topic);
      assertThat(consumer.pollOnce().handled()).isEqualTo(3);
      List<UUID> notYetHandled = ids(TransportSide.append(env, f.topic, 2, i -> "b" + i));
      publishAll(relay, f.topic);

      server.restart(); // the stream and its group are gone
      reconnected(redis);
      List<UUID> afterTheLoss = ids(TransportSide.append(env, f.topic, 1, i -> "c" + i));
      publishAll(relay, f.topic); // detects the loss: all 5 again with their IDs, then the new one
      assertThat(redis.xlen(f.streamKey())).isEqualTo(6);

      // The first polls meet the connections the restart broke, then NOGROUP; the group is recreated after.
      ConsumerTestKit.await("the 6 entries read again", Duration.ofSeconds(10), () -> {
        try {
          consumer.pollOnce();
          return consumer.status().duplicatesSkipped() + f.effectCount("tail") >= 9;
        } catch (JedisConnectionException e) {
          return false;
        }
      });
      assertThat(recreated).containsExactly(f.streamKey());
      for (UUID id : concat(notYetHandled, afterTheLoss)) {
        assertThat(f.effectCount("tail", id)).as("message %s, published before the loss or after", id).isEqualTo(1);
      }
      for (UUID id : handled) {
        assertThat(f.effectCount("tail", id)).as("message %s, handled before the loss", id).isEqualTo(1);
      }
      assertThat(consumer.status().duplicatesSkipped()).isEqualTo(3);
    }
    assertThat(f.effectCount("tail")).isEqualTo(6);
    assertThat(f.doubleEffects("tail")).isZero();
  }

  @Test
  void aListDeletedByHandWhileItsHashStaysIsNotDetectedAndAReplayFromTheOutboxRecoversIt() throws Exception {
    RestartableRedis server = env.privateRedis();
    RedisClient redis = env.newRedisClient(server.uri());
    Fixture f = new Fixture(env, "list-deleted", redis, server.uri());
    String list = ListFormat.listKey(env.keyPrefix(), f.topic, 0);
    AtomicLong republished = new AtomicLong();
    try (Relay relay = relay(redis, f.topic).listTransport(1000).listener(new RelayListener() {
          @Override
          public void streamLost(ShardId shard, long rows) {
            republished.addAndGet(rows);
          }
        }).build();
        ListConsumer consumer = TransportSide.listConsumer(env, f, "billing").handler(f.effect("billing", null))
            .build()) {
      List<UUID> deleted = ids(TransportSide.append(env, f.topic, 10, i -> "a" + i));
      publishAll(relay, f.topic);
      redis.del(list); // by hand: the relay's hash beside it still counts the 10 elements it pushed
      assertThat(redis.hget(ListFormat.relayKey(list), "added")).isEqualTo("10");

      List<UUID> later = ids(TransportSide.append(env, f.topic, 5, i -> "b" + i));
      publishAll(relay, f.topic);
      TransportSide.drain(TransportSide.of(consumer));

      // The boundary: an empty list is also what consumers leave when they finish everything, so the relay
      // cannot tell this loss from normal work and re-pushes nothing.
      assertThat(republished.get()).isZero();
      assertThat(consumer.processed(later)).containsExactlyInAnyOrderElementsOf(later);
      assertThat(consumer.processed(deleted)).isEmpty();

      // The recovery: replay the period from the outbox; the inbox skips what was done.
      ReplayResult replay = consumer.replayFromOutbox(OutboxRange.all());
      assertThat(replay.handled()).isEqualTo(10);
      assertThat(replay.duplicates()).isEqualTo(5);
      assertThat(consumer.processed(deleted)).containsExactlyInAnyOrderElementsOf(deleted);
    }
    assertThat(f.effectCount("billing")).isEqualTo(15);
    assertThat(f.doubleEffects("billing")).isZero();
  }

  private dev.handoff.relay.RelayBuilder relay(RedisClient redis, String topic) {
    return Relay.builder(env.dataSource(), env.specOf(redis)).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic)).leaseTtl(Duration.ofSeconds(5));
  }

  private void publishAll(Relay relay, String topic) {
    String unpublished = "SELECT count(*) FROM outbox WHERE topic = ? AND published_at IS NULL";
    relay.relayOnce(); // at least one cycle, which is also what notices a loss
    for (int i = 0; i < 100 && env.queryLong(unpublished, topic) > 0; i++) {
      relay.relayOnce();
    }
    assertThat(env.queryLong(unpublished, topic)).isZero();
  }

  private static List<UUID> ids(List<AppendedMessage> appended) {
    return appended.stream().map(AppendedMessage::messageId).toList();
  }

  private static List<UUID> concat(List<UUID> a, List<UUID> b) {
    List<UUID> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  /** Lets the pool discard the connections the restart broke. */
  private static void reconnected(RedisClient redis) {
    for (int i = 0; i < 20; i++) {
      try {
        redis.ping();
        return;
      } catch (JedisConnectionException e) {
        // a broken pooled connection; the next borrow gets another
      }
    }
    throw new IllegalStateException("Redis did not come back");
  }
}
