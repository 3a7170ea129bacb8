package dev.handoff.consumer;

import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Shards;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.XAddParams;

/**
 * A topic of an ordered group's tests: messages of many keys, each key's messages numbered from 1, XADDed to the
 * key's shard with explicit rising IDs as the relay writes them; and a handler that records each message's key,
 * number, shard and the consumer that applied it, in the message's transaction. The effect table has no unique key,
 * so a double effect shows as two rows, and its serial records the order in which the effects were written: within
 * one shard, one batch at a time, that is the order in which they committed.
 */
final class OrderedTopic {

  static final Pattern SEQ = Pattern.compile("\"seq\":(\\d+)");

  final TestEnvironment env;
  final String topic;
  final int shards;
  final String effects;
  private final long[] nextMs;
  private final Map<String, Integer> nextSeq = new java.util.HashMap<>();

  OrderedTopic(TestEnvironment env, String topic, int shards) {
    this.env = env;
    this.topic = topic;
    this.shards = shards;
    this.effects = "ordered_effect_" + topic.replace('-', '_');
    this.nextMs = new long[shards];
    env.execute("CREATE TABLE IF NOT EXISTS " + env.schema() + "." + effects + " (id bigserial PRIMARY KEY,"
        + " message_key text NOT NULL, seq int NOT NULL, shard int NOT NULL, stream_id text NOT NULL,"
        + " message_id uuid NOT NULL, consumer text NOT NULL)");
  }

  /** The builder of an ordered consumer of {@code group} named {@code name}, recording its effects. */
  StreamConsumerBuilder consumer(String group, String name) {
    return builder(env.dataSource(), RedisConnectionSpec.of(env.redisUri()), env.schema(), env.keyPrefix(), topic,
        shards, group, name).handler(effect(env.schema(), effects, name, shards));
  }

  /** The same for a child JVM, which has no test environment. */
  static StreamConsumerBuilder builder(DataSource dataSource, RedisConnectionSpec redis, String schema,
      String keyPrefix, String topic, int shards, String group, String name) {
    return StreamConsumer.builder(dataSource, redis)
        .schema(schema)
        .keyPrefix(keyPrefix)
        .topic(TopicConfig.of(topic).withShards(shards))
        .group(group)
        .consumerName(name)
        .ordering(Ordering.perShard().leaseTtl(Duration.ofSeconds(2)))
        .block(Duration.ofMillis(100))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200));
  }

  /** Records (key, number, shard, consumer) for each message, in its transaction. */
  static MessageHandler effect(String schema, String table, String consumer, int shards) {
    return (tx, m) -> {
      try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + schema + "." + table
          + " (message_key, seq, shard, stream_id, message_id, consumer) VALUES (?, ?, ?, ?, ?, ?)")) {
        ps.setString(1, m.key());
        ps.setInt(2, seqOf(m));
        ps.setInt(3, Shards.of(m.key(), m.messageId(), shards));
        ps.setString(4, m.delivery().streamId());
        ps.setObject(5, m.messageId());
        ps.setString(6, consumer);
        ps.executeUpdate();
      }
    };
  }

  static int seqOf(InboundMessage m) {
    Matcher matcher = SEQ.matcher(new String(m.payload(), StandardCharsets.UTF_8));
    if (!matcher.find()) {
      throw new IllegalArgumentException("no seq in " + m.messageId());
    }
    return Integer.parseInt(matcher.group(1));
  }

  /** The shard of {@code key}. */
  int shardOf(String key) {
    return Shards.of(key, UUID.randomUUID(), shards);
  }

  /** Publishes the next message of {@code key}; returns it. */
  StreamMessage publish(RedisClient redis, String key) {
    int seq = nextSeq.merge(key, 1, Integer::sum);
    StreamMessage m = new StreamMessage(UUID.randomUUID(), 0, topic, "test.ordered", key, Map.of(),
        Instant.now().truncatedTo(ChronoUnit.MILLIS), ("{\"seq\":" + seq + "}").getBytes(StandardCharsets.UTF_8));
    int shard = shardOf(key);
    String id = (1_000 + shard) + "-" + (++nextMs[shard]);
    redis.xadd(StreamFormat.streamKey(env.keyPrefix(), topic, shard).getBytes(StandardCharsets.UTF_8),
        XAddParams.xAddParams().id(id), StreamFormat.encode(m));
    return m;
  }

  /** Publishes {@code perKey} messages for each of {@code keys} keys, round robin over the keys. */
  List<StreamMessage> publish(RedisClient redis, int keys, int perKey) {
    List<StreamMessage> out = new ArrayList<>(keys * perKey);
    for (int i = 0; i < perKey; i++) {
      for (int k = 0; k < keys; k++) {
        out.add(publish(redis, "key-" + k));
      }
    }
    return out;
  }

  long effects() {
    return env.queryLong("SELECT count(*) FROM " + effects);
  }

  /** Messages with more than one effect: must be 0. */
  long doubleEffects() {
    return env.queryLong("SELECT count(*) FROM (SELECT message_id FROM " + effects
        + " GROUP BY message_id HAVING count(*) > 1) d");
  }

  /**
   * Effects written out of their key's order: a row whose number is not one more than the number of the key's row
   * written before it. With every message applied once, 0 means each key's effects committed in sequence.
   */
  long outOfOrder() {
    return env.queryLong("SELECT count(*) FROM (SELECT seq, lag(seq, 1, 0) OVER (PARTITION BY message_key ORDER BY"
        + " id) AS before FROM " + effects + ") e WHERE seq <> before + 1");
  }

  /**
   * Effects written before an effect of an earlier entry of the same shard: with the shard's entries numbered in
   * stream order, a row whose entry is not after the entry of the shard's row written before it. Must be 0.
   */
  long outOfStreamOrder() {
    return env.queryLong("SELECT count(*) FROM (SELECT split_part(stream_id, '-', 2)::bigint AS n,"
        + " lag(split_part(stream_id, '-', 2)::bigint) OVER (PARTITION BY shard ORDER BY id) AS before FROM "
        + effects + ") e WHERE before IS NOT NULL AND n <= before");
  }

  /** How many times a shard's effects changed hands: runs of one consumer per shard, summed over the shards. */
  long ownerRuns() {
    return env.queryLong("SELECT count(*) FROM (SELECT consumer, lag(consumer) OVER (PARTITION BY shard ORDER BY id)"
        + " AS before FROM " + effects + ") e WHERE before IS NULL OR before <> consumer");
  }
}
