package dev.handoff.ledger.demo;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import redis.clients.jedis.StreamEntryID;

/**
 * The demo's last fault: every message delivered again. On streams both groups are set back to the start; lists keep
 * nothing once acknowledged, so every outbox message is pushed again onto its list with its original ID.
 */
record DemoReplay(LedgerServers servers, Demo.Config config, TimedLog log) {

  /** Delivers every message again; returns how many. */
  long run() {
    if (config.lists()) {
      log.event("REPLAY on lists: a list keeps nothing once acknowledged, so there is no history to set back to 0-0;"
          + " instead every outbox message is pushed again onto its list with its original ID (what the relay"
          + " does after Redis lost data)");
      long pushed = repush();
      log.event("FAULT re-push: %,d messages pushed again; the ledger consumers take each one and must skip it",
          pushed);
      return pushed;
    }
    long replayed = replay();
    log.event("FAULT replay: both groups set back to 0-0; every retained message (%,d) is delivered again",
        replayed);
    return replayed;
  }

  private long replay() {
    long entries = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      entries += servers.redis().xlen(key);
      servers.redis().xgroupSetID(key, LedgerConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
      servers.redis().xgroupSetID(key, NaiveConsumer.DEFAULT_GROUP, new StreamEntryID(0, 0));
    }
    return entries;
  }

  /**
   * Pushes every outbox message of the topic again onto its list, with the ID the relay gave it, in the order of
   * those IDs. Returns how many were pushed.
   */
  private long repush() {
    long pushed = 0;
    try (Connection c = servers.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT id, message_id, shard, message_key, type, payload,"
            + " headers::text, created_at, stream_ms, stream_seq FROM " + config.schema() + ".outbox WHERE topic = ?"
            + " AND stream_ms IS NOT NULL ORDER BY stream_ms, stream_seq")) {
      c.setAutoCommit(false);
      ps.setFetchSize(1_000);
      ps.setString(1, PaymentEvents.TOPIC);
      try (ResultSet rs = ps.executeQuery()) {
        List<List<byte[]>> perShard = new ArrayList<>();
        for (int i = 0; i < PaymentEvents.SHARDS; i++) {
          perShard.add(new ArrayList<>());
        }
        while (rs.next()) {
          // handoff's own reader of the headers column: the command line's Json only writes
          StreamMessage m = new StreamMessage(rs.getObject(2, UUID.class), rs.getLong(1), PaymentEvents.TOPIC,
              rs.getString(5), rs.getString(4), dev.handoff.core.internal.Json.readStringMap(rs.getString(7)),
              rs.getTimestamp(8).toInstant(), rs.getBytes(6));
          int shard = rs.getInt(3);
          perShard.get(shard).add(ListFormat.encode(rs.getLong(9) + "-" + rs.getLong(10), m));
          if (perShard.get(shard).size() == 500) {
            pushed += rpush(shard, perShard.get(shard));
          }
        }
        for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
          pushed += rpush(shard, perShard.get(shard));
        }
      }
      c.rollback();
    } catch (SQLException e) {
      throw new LedgerException("demo query failed: " + e.getMessage(), e);
    }
    return pushed;
  }

  /** Pushes {@code elements} onto the shard's list and empties them; returns how many. */
  private long rpush(int shard, List<byte[]> elements) {
    if (elements.isEmpty()) {
      return 0;
    }
    byte[] key = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard).getBytes(StandardCharsets.UTF_8);
    servers.redis().rpush(key, elements.toArray(byte[][]::new));
    long n = elements.size();
    elements.clear();
    return n;
  }
}
