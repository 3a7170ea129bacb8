package dev.handoff.consumer.internal;

import dev.handoff.consumer.admin.TopicInspector.FailoverReport;
import dev.handoff.consumer.admin.TopicInspector.FailoverReport.StreamFindings;
import dev.handoff.core.StreamFormat;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;

/**
 * Reads a topic's streams against the database after a failover ({@link FailoverReport}): each page of entries is
 * looked up in the outbox and its purge log in one statement ({@link OutboxQueries#ghosts}), and every message ID
 * is counted to find those the stream holds twice. Holds one stream's message IDs in memory at a time. Not
 * thread-safe; one per report.
 */
final class FailoverFindings {

  private static final int PAGE = 500;

  private final UnifiedJedis redis;
  private final OutboxQueries outbox;
  private final String keyPrefix;
  private final int listLimit;

  FailoverFindings(UnifiedJedis redis, String schema, String keyPrefix, int listLimit) {
    this.redis = redis;
    this.outbox = new OutboxQueries(schema);
    this.keyPrefix = keyPrefix;
    this.listLimit = listLimit;
  }

  FailoverReport report(Connection c, String topic, Set<Integer> shards) throws SQLException {
    List<StreamFindings> streams = new ArrayList<>();
    for (int shard : shards) {
      String key = StreamFormat.streamKey(keyPrefix, topic, shard);
      if (redis.exists(key) && "stream".equals(redis.type(key))) {
        streams.add(stream(c, topic, shard, key));
      }
    }
    return new FailoverReport(topic, streams);
  }

  private StreamFindings stream(Connection c, String topic, int shard, String key) throws SQLException {
    long entries = 0;
    long ghosts = 0;
    List<UUID> ghostIds = new ArrayList<>();
    Map<UUID, Integer> seen = new HashMap<>();
    Set<UUID> twice = new LinkedHashSet<>();
    String start = "-";
    while (true) {
      List<StreamEntry> page = redis.xrange(key, start, "+", PAGE);
      if (page.isEmpty()) {
        break;
      }
      Long[] outboxIds = new Long[page.size()];
      UUID[] messageIds = new UUID[page.size()];
      for (int i = 0; i < page.size(); i++) {
        Map<String, String> fields = page.get(i).getFields();
        messageIds[i] = uuidOrNull(fields.get(StreamFormat.MESSAGE_ID));
        outboxIds[i] = longOrNull(fields.get(StreamFormat.OUTBOX_ID));
        if (messageIds[i] != null && seen.merge(messageIds[i], 1, Integer::sum) == 2) {
          twice.add(messageIds[i]);
        }
      }
      for (int i : new TreeSet<>(outbox.ghosts(c, topic, outboxIds, messageIds))) {
        ghosts++;
        if (ghostIds.size() < listLimit && messageIds[i] != null) {
          ghostIds.add(messageIds[i]);
        }
      }
      entries += page.size();
      if (page.size() < PAGE) {
        break;
      }
      start = "(" + page.get(page.size() - 1).getID();
    }
    return new StreamFindings(shard, key, entries, ghosts, ghostIds, twice.size(),
        twice.stream().limit(listLimit).toList());
  }

  private static UUID uuidOrNull(String text) {
    try {
      return text == null ? null : UUID.fromString(text);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static Long longOrNull(String text) {
    try {
      return text == null ? null : Long.valueOf(text);
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
