package dev.handoff.consumer;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.testing.TestEnvironment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XPendingParams;
import redis.clients.jedis.resps.StreamPendingEntry;

/**
 * One test's topic, effect table and stream writer. Entries are real handoff entries
 * ({@link StreamFormat#encode(StreamMessage)}) XADDed the way the relay will. The effect table has no unique key
 * on purpose: a double effect shows up as two rows.
 */
final class Fixture {

  private static final AtomicLong OUTBOX_IDS = new AtomicLong(1);

  final TestEnvironment env;
  final String topic;
  final String effects;
  final RedisClient redis;
  final URI redisUri;

  Fixture(TestEnvironment env, String topic) {
    this(env, topic, env.redis(), env.redisUri());
  }

  Fixture(TestEnvironment env, String topic, RedisClient redis, URI redisUri) {
    this.env = env;
    this.topic = topic;
    this.effects = "effect_" + topic.replace('-', '_');
    this.redis = redis;
    this.redisUri = redisUri;
    env.execute("CREATE TABLE IF NOT EXISTS " + env.schema() + "." + effects
        + " (id bigserial PRIMARY KEY, consumer_group text NOT NULL, message_id uuid NOT NULL, tag text)");
  }

  String streamKey() {
    return StreamFormat.streamKey(env.keyPrefix(), topic, 0);
  }

  String streamKey(int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), topic, shard);
  }

  /** A consumer of {@code group} whose handler writes one effect row per message. */
  StreamConsumerBuilder consumer(String group) {
    return consumerWithoutHandler(group).handler(effect(group, null));
  }

  /** The same settings with no handler yet, for a test that gives a batch or jOOQ handler. */
  StreamConsumerBuilder consumerWithoutHandler(String group) {
    return consumerWithoutHandler(group, env.dataSource());
  }

  /** The same, on a pool of the test's choosing. */
  StreamConsumerBuilder consumerWithoutHandler(String group, DataSource dataSource) {
    return StreamConsumer.builder(dataSource, RedisConnectionSpec.of(redisUri))
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(topic)
        .group(group)
        .block(Duration.ofMillis(100))
        .minIdle(Duration.ofSeconds(2))
        .reclaimInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200));
  }

  /** A handler that writes one effect row on the message's transaction. */
  MessageHandler effect(String group, String tag) {
    return (tx, m) -> {
      try (PreparedStatement ps = tx.prepareStatement(
          "INSERT INTO " + effects + " (consumer_group, message_id, tag) VALUES (?, ?, ?)")) {
        ps.setString(1, group);
        ps.setObject(2, m.messageId());
        ps.setString(3, tag);
        ps.executeUpdate();
      }
    };
  }

  StreamMessage message() {
    return new StreamMessage(UUID.randomUUID(), OUTBOX_IDS.getAndIncrement(), topic, "test.event",
        "key-" + OUTBOX_IDS.get(), Map.of("content-type", "application/json"),
        Instant.now().truncatedTo(ChronoUnit.MILLIS), "{\"n\":1}".getBytes(StandardCharsets.UTF_8));
  }

  /** XADDs the message with an auto ID; returns the ID. */
  String publish(StreamMessage m) {
    return publish(m, null, 0);
  }

  String publish(StreamMessage m, String explicitId, int shard) {
    XAddParams params = XAddParams.xAddParams();
    if (explicitId != null) {
      params.id(explicitId);
    }
    byte[] id = redis.xadd(StreamFormat.streamKey(env.keyPrefix(), topic, shard).getBytes(StandardCharsets.UTF_8),
        params, StreamFormat.encode(m));
    return new String(id, StandardCharsets.UTF_8);
  }

  List<StreamMessage> publishMany(int n) {
    List<StreamMessage> out = new ArrayList<>(n);
    try (var pipeline = redis.pipelined()) {
      for (int i = 0; i < n; i++) {
        StreamMessage m = message();
        out.add(m);
        pipeline.xadd(streamKey().getBytes(StandardCharsets.UTF_8), XAddParams.xAddParams(), StreamFormat.encode(m));
      }
      pipeline.sync();
    }
    return out;
  }

  long effectCount(String group) {
    return env.queryLong("SELECT count(*) FROM " + effects + " WHERE consumer_group = ?", group);
  }

  long effectCount(String group, UUID messageId) {
    return env.queryLong("SELECT count(*) FROM " + effects + " WHERE consumer_group = ? AND message_id = ?", group,
        messageId);
  }

  /** Messages with more than one effect row: must always be 0. */
  long doubleEffects(String group) {
    return env.queryLong("SELECT count(*) FROM (SELECT message_id FROM " + effects
        + " WHERE consumer_group = ? GROUP BY message_id HAVING count(*) > 1) d", group);
  }

  long inboxCount(String group) {
    return env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ?", group);
  }

  long inboxCount(String group, String outcome) {
    return env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ? AND outcome = ?", group, outcome);
  }

  long pendingTotal(String group) {
    return pendingTotal(group, 0);
  }

  long pendingTotal(String group, int shard) {
    return redis.xpending(streamKey(shard), group).getTotal();
  }

  List<StreamPendingEntry> pending(String group) {
    return redis.xpending(streamKey(), group, XPendingParams.xPendingParams("-", "+", 100_000));
  }

  void createGroupAtStart(String group) {
    redis.xgroupCreate(streamKey(), group, new StreamEntryID(0, 0), true);
  }
}
