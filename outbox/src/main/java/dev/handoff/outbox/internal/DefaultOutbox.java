package dev.handoff.outbox.internal;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.InvalidMessageException;
import dev.handoff.core.ShardId;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Json;
import dev.handoff.core.internal.Notifications;
import dev.handoff.core.internal.Shards;
import dev.handoff.core.internal.TopicRegistry;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.OutboxConfig;
import dev.handoff.outbox.OutboxFullException;
import dev.handoff.outbox.OutboxWriteException;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The JDBC implementation of {@link Outbox}. Thread-safe: it holds no per-call state. */
public final class DefaultOutbox implements Outbox {

  private static final Logger log = LoggerFactory.getLogger(Outbox.class);

  private final OutboxConfig config;
  private final String channel;
  private final String insertOne;
  private final String insertMany;
  private final DepthGauge depth;
  private final TopicRegistry registry;
  private final Map<String, Integer> confirmed = new ConcurrentHashMap<>();
  private volatile boolean unreadable;

  public DefaultOutbox(OutboxConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    String table = config.schema() + ".outbox";
    this.channel = Notifications.channel(config.schema());
    // The wake-up rides in the insert's own statement: one round trip per append. It notifies only when the shard's
    // relay sleeps (Notifications): a NOTIFY would make the commit wait for every other notifying commit.
    // Both statements run on the application's connection as its own statements do, under its prepareThreshold: they
    // have no plan to go stale, and parsing and planning the CTE at every append is server CPU taken from every
    // session (docs/performance.md). A connection behind transaction pooling needs prepareThreshold=0 for its own
    // COMMIT anyway, and then these are unnamed too.
    this.insertOne =
        "WITH ins AS (INSERT INTO " + table
            + " (message_id, topic, shard, message_key, type, payload, headers)"
            + " VALUES (?, ?, ?, ?, ?, ?, ?::jsonb) RETURNING id)"
            + " SELECT ins.id FROM ins, (SELECT CASE WHEN pg_try_advisory_xact_lock_shared(?, ?) THEN NULL"
            + " ELSE pg_notify(?, ?) END) n";
    this.insertMany =
        "WITH n AS MATERIALIZED (SELECT w.t, CASE WHEN pg_try_advisory_xact_lock_shared(w.k, w.s) THEN NULL"
            + " ELSE pg_notify(?, w.t) END FROM unnest(?::int[], ?::int[], ?::text[]) AS w(k, s, t)),"
            + " ins AS (INSERT INTO " + table
            + " (message_id, topic, shard, message_key, type, payload, headers)"
            + " SELECT m, t, s, k, ty, p, h::jsonb"
            + " FROM unnest(?::uuid[], ?::text[], ?::int[], ?::text[], ?::text[], ?::bytea[], ?::text[])"
            + " AS u(m, t, s, k, ty, p, h) RETURNING id, message_id)"
            + " SELECT ins.id, ins.message_id FROM ins WHERE (SELECT count(*) FROM n) >= 0";
    this.depth = new DepthGauge(config.schema(), config.depthRefreshInterval().toNanos());
    this.registry = new TopicRegistry(config.schema());
  }

  /**
   * The shard count of {@code topic}: the one on record in the database, which this outbox's own, if it states one,
   * must equal. The record is read, never written, here: an insert would hold the topic's row locked until the
   * caller's transaction ends, and every other first append to the topic would wait for it. Relays and consumers
   * record the count when they start. Until one has, this outbox uses its own count (one shard if it states none)
   * and reads again at the next append; once read, the count is kept.
   *
   * <p>The read runs under a savepoint, so that a role without the grant on the table (granted before migration V5
   * and not granted again) costs the application's transaction nothing: this outbox then uses its own counts,
   * unchecked, and says so once at WARN.
   */
  private int shardsOf(Connection tx, String topic) throws SQLException {
    Integer known = confirmed.get(topic);
    if (known != null) {
      return known;
    }
    TopicConfig stated = config.topic(topic);
    TopicRegistry.Declared d;
    Savepoint beforeRead = tx.setSavepoint();
    try {
      d = registry.read(tx, topic).orElse(null);
      tx.releaseSavepoint(beforeRead);
    } catch (SQLException e) {
      if (!"42501".equals(e.getSQLState())) {
        throw e;
      }
      tx.rollback(beforeRead);
      if (!unreadable) {
        unreadable = true;
        log.warn("outbox: the database role cannot read {}.topic ({}): apply the application role's grants again"
            + " after migration V5 (handoff grants --role application); until then appends use this outbox's own"
            + " shard counts, unchecked", config.schema(), e.getMessage());
      }
      confirmed.put(topic, stated.shards());
      return stated.shards();
    }
    if (d == null) {
      return stated.shards();
    }
    if (config.topics().containsKey(topic) && d.shards() != stated.shards()) {
      throw TopicRegistry.mismatch(topic, d, stated.shards(), "this outbox");
    }
    confirmed.put(topic, d.shards());
    return d.shards();
  }

  @Override
  public OutboxConfig config() {
    return config;
  }

  @Override
  public AppendedMessage append(Connection tx, Message message) {
    Objects.requireNonNull(message, "message");
    requireTransaction(tx);
    Prepared validated = prepare(message);
    try {
      Prepared p = validated.onShardOf(message, shardsOf(tx, message.topic()));
      reserveCapacity(tx, message.topic(), 1);
      try (PreparedStatement ps = tx.prepareStatement(insertOne)) {
        ps.setObject(1, p.messageId);
        ps.setString(2, message.topic());
        ps.setInt(3, p.shard);
        ps.setString(4, message.key());
        ps.setString(5, message.type());
        ps.setBytes(6, p.payload);
        ps.setString(7, p.headersJson);
        ps.setInt(8, Notifications.lockKey(config.schema(), message.topic()));
        ps.setInt(9, p.shard);
        ps.setString(10, channel);
        ps.setString(11, message.topic());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          long id = rs.getLong(1);
          depth.added(message.topic(), 1);
          return new AppendedMessage(id, p.messageId, message.topic(), p.shard);
        }
      }
    } catch (SQLException e) {
      throw new OutboxWriteException("could not append to outbox topic '" + message.topic() + "'", e);
    }
  }

  @Override
  public List<AppendedMessage> appendAll(Connection tx, List<Message> messages) {
    Objects.requireNonNull(messages, "messages");
    requireTransaction(tx);
    if (messages.isEmpty()) {
      return List.of();
    }
    if (messages.size() == 1) {
      // One row: the single-row statement, which the server parses and plans in a fraction of the batch one's time.
      return List.of(append(tx, Objects.requireNonNull(messages.get(0), "messages must not contain null")));
    }
    int n = messages.size();
    List<Prepared> prepared = new ArrayList<>(n);
    Map<String, Integer> perTopic = new LinkedHashMap<>();
    for (Message m : messages) {
      prepared.add(prepare(Objects.requireNonNull(m, "messages must not contain null")));
      perTopic.merge(m.topic(), 1, Integer::sum);
    }
    UUID[] ids = new UUID[n];
    String[] topics = new String[n];
    Integer[] shards = new Integer[n];
    String[] keys = new String[n];
    String[] types = new String[n];
    byte[][] payloads = new byte[n][];
    String[] headers = new String[n];
    try {
      Map<String, Integer> shardCounts = new HashMap<>();
      for (String topic : perTopic.keySet()) {
        shardCounts.put(topic, shardsOf(tx, topic));
      }
      for (int i = 0; i < n; i++) {
        Message m = messages.get(i);
        Prepared p = prepared.get(i).onShardOf(m, shardCounts.get(m.topic()));
        ids[i] = p.messageId;
        topics[i] = m.topic();
        shards[i] = p.shard;
        keys[i] = m.key();
        types[i] = m.type();
        payloads[i] = p.payload;
        headers[i] = p.headersJson;
      }
      for (Map.Entry<String, Integer> e : perTopic.entrySet()) {
        reserveCapacity(tx, e.getKey(), e.getValue());
      }
      Map<UUID, Long> outboxIds = new HashMap<>(n * 2);
      Set<ShardId> touched = new LinkedHashSet<>();
      for (int i = 0; i < n; i++) {
        touched.add(new ShardId(topics[i], shards[i]));
      }
      Integer[] wakeKeys = new Integer[touched.size()];
      Integer[] wakeShards = new Integer[touched.size()];
      String[] wakeTopics = new String[touched.size()];
      int w = 0;
      for (ShardId s : touched) {
        wakeKeys[w] = Notifications.lockKey(config.schema(), s.topic());
        wakeShards[w] = s.shard();
        wakeTopics[w++] = s.topic();
      }
      try (PreparedStatement ps = tx.prepareStatement(insertMany)) {
        ps.setString(1, channel);
        ps.setArray(2, tx.createArrayOf("int4", wakeKeys));
        ps.setArray(3, tx.createArrayOf("int4", wakeShards));
        ps.setArray(4, tx.createArrayOf("text", wakeTopics));
        ps.setArray(5, tx.createArrayOf("uuid", ids));
        ps.setArray(6, tx.createArrayOf("text", topics));
        ps.setArray(7, tx.createArrayOf("int4", shards));
        ps.setArray(8, tx.createArrayOf("text", keys));
        ps.setArray(9, tx.createArrayOf("text", types));
        Array payloadArray = tx.createArrayOf("bytea", payloads);
        ps.setArray(10, payloadArray);
        ps.setArray(11, tx.createArrayOf("text", headers));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            outboxIds.put(rs.getObject(2, UUID.class), rs.getLong(1));
          }
        }
      }
      perTopic.forEach(depth::added);
      List<AppendedMessage> result = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        result.add(new AppendedMessage(outboxIds.get(ids[i]), ids[i], topics[i], shards[i]));
      }
      return result;
    } catch (SQLException e) {
      throw new OutboxWriteException("could not append a batch of " + n + " messages to the outbox", e);
    }
  }

  /** A validated message; its shard is set once the topic's count is known ({@link #onShardOf}). */
  private record Prepared(UUID messageId, int shard, byte[] payload, String headersJson) {
    Prepared onShardOf(Message m, int shards) {
      return new Prepared(messageId, Shards.of(m.key(), messageId, shards), payload, headersJson);
    }
  }

  private Prepared prepare(Message message) {
    if (message.payloadSize() > config.maxPayloadBytes()) {
      throw new InvalidMessageException(
          "payload",
          "payload of a '" + message.type() + "' message to topic '" + message.topic() + "' is "
              + message.payloadSize() + " bytes, over the limit of " + config.maxPayloadBytes() + " bytes");
    }
    String headersJson = Json.writeStringMap(message.headers());
    int headerBytes = headersJson.getBytes(StandardCharsets.UTF_8).length;
    if (headerBytes > config.maxHeaderBytes()) {
      throw new InvalidMessageException(
          "headers",
          "headers of a '" + message.type() + "' message to topic '" + message.topic() + "' are " + headerBytes
              + " bytes as JSON, over the limit of " + config.maxHeaderBytes() + " bytes");
    }
    return new Prepared(UuidV7.next(config.clock().millis()), -1, message.payload(), headersJson);
  }

  private static void requireTransaction(Connection tx) {
    Objects.requireNonNull(tx, "tx");
    try {
      if (tx.getAutoCommit()) {
        throw new IllegalStateException(
            "outbox append needs a connection inside a transaction, but this connection is in auto-commit mode; "
                + "call setAutoCommit(false) and commit the business change and the append together");
      }
    } catch (SQLException e) {
      throw new OutboxWriteException("could not read the connection's auto-commit mode", e);
    }
  }

  private void reserveCapacity(Connection tx, String topic, int rows) throws SQLException {
    CapacityPolicy policy = config.topic(topic).capacity();
    if (policy instanceof CapacityPolicy.Reject reject) {
      long seen = depth.depth(tx, topic, reject.maxUnpublished());
      if (seen + rows > reject.maxUnpublished()) {
        throw new OutboxFullException(topic, seen, reject.maxUnpublished(), rows > 1 ? rows + " rows refused" : "");
      }
    } else if (policy instanceof CapacityPolicy.Wait wait) {
      long max = wait.maxUnpublished();
      long seen = depth.depth(tx, topic, max);
      if (seen + rows <= max) {
        return;
      }
      long startNanos = System.nanoTime();
      long deadlineNanos = startNanos + wait.deadline().toNanos();
      long pollMillis = Math.max(1, config.capacityPollInterval().toMillis());
      while (seen + rows > max) {
        long remainingNanos = deadlineNanos - System.nanoTime();
        if (remainingNanos <= 0) {
          throw new OutboxFullException(
              topic, seen, max, "waited " + wait.deadline().toMillis() + " ms for capacity");
        }
        sleep(Math.min(pollMillis, Math.max(1, remainingNanos / 1_000_000)), topic);
        seen = depth.count(tx, topic, max);
      }
    }
  }

  private static void sleep(long millis, String topic) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for capacity on outbox topic '" + topic + "'", e);
    }
  }
}
