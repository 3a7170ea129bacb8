package dev.handoff.relay.internal;

import dev.handoff.core.TopicConfig;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unpublished rows on a shard that no relay will ever publish: a topic's shard count is declared by every outbox,
 * relay and consumer on its own, and an outbox that declares more shards than the relays puts rows on shards no
 * relay owns. They would wait for good while everything looked healthy. Looked for on the relay's thread every
 * {@link #EVERY} (and by {@code maintainOnce()}): rows of this relay's topics at or above its shard count whose
 * shard no live lease covers (a relay that declares more shards may own them, during a change of the count). What
 * it finds makes the relay's health {@code DOWN}, with the topic, the shard and the two counts, and is logged once
 * at ERROR.
 *
 * <p>Thread-safe: the finding is volatile; the checks run on the relay's thread, under its work lock.
 */
final class StrandedShards {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  /**
   * How often the relay's thread looks: a misconfiguration need not be seen within seconds, and every transaction
   * of an idle relay counts (at 10 s this look raised an idle relay owning 200 shards from 1.6-1.8 to 1.9 per s).
   */
  static final Duration EVERY = Duration.ofSeconds(30);
  /** Rows counted, at most, on the stranded shard. */
  private static final int COUNT_LIMIT = 10_000;

  private final RelayConfig config;
  private final String sql;
  private final String[] topics;
  private final Integer[] shardCounts;
  private long nextCheckNanos = System.nanoTime();
  private volatile String finding;

  StrandedShards(RelayConfig config) {
    this.config = config;
    this.topics = config.topics().stream().map(TopicConfig::name).toArray(String[]::new);
    this.shardCounts = config.topics().stream().map(TopicConfig::shards).toArray(Integer[]::new);
    String outbox = config.schema() + ".outbox";
    // One index probe per topic on the partial index of unpublished rows (topic, shard, id).
    this.sql = "SELECT t.topic, t.shards, o.shard, (SELECT count(*) FROM (SELECT 1 FROM " + outbox + " x"
        + " WHERE x.topic = t.topic AND x.shard = o.shard AND x.published_at IS NULL LIMIT " + COUNT_LIMIT + ") n)"
        + " FROM unnest(?::text[], ?::int[]) AS t(topic, shards) CROSS JOIN LATERAL (SELECT u.shard FROM " + outbox
        + " u WHERE u.topic = t.topic AND u.shard >= t.shards AND u.published_at IS NULL AND NOT EXISTS (SELECT 1"
        + " FROM " + config.schema() + ".relay_lease l WHERE l.topic = u.topic AND l.shard = u.shard"
        + " AND l.expires_at > clock_timestamp()) ORDER BY u.shard LIMIT 1) o ORDER BY t.topic LIMIT 1";
  }

  /** What was found at the last look, as the health reason's text, or null. */
  String finding() {
    return finding;
  }

  /** Looks when a look is due. */
  void checkIfDue(ConnectionSource connections) throws SQLException {
    if (System.nanoTime() - nextCheckNanos < 0) {
      return;
    }
    nextCheckNanos = System.nanoTime() + EVERY.toNanos();
    try (Connection c = connections.get()) {
      check(c);
    }
  }

  /** Looks now, on {@code c}. */
  void check(Connection c) throws SQLException {
    String found = null;
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setArray(1, c.createArrayOf("text", topics));
      ps.setArray(2, c.createArrayOf("integer", shardCounts));
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          long rows = rs.getLong(4);
          found = "topic '" + rs.getString(1) + "' has " + (rows >= COUNT_LIMIT ? "at least " : "") + rows
              + " unpublished row(s) on shard " + rs.getInt(3) + ", which no relay owns: this relay declares "
              + rs.getInt(2) + " shard(s) (0.." + (rs.getInt(2) - 1) + "), fewer than the outbox that appended"
              + " them; every outbox, relay and consumer of a topic must declare the same shard count"
              + " (TopicConfig.withShards)";
        }
      }
    }
    if (found != null && !found.equals(finding)) {
      log.error("relay {}: {}; the rows wait until a relay that declares that many shards runs", config.owner(),
          found);
    } else if (found == null && finding != null) {
      log.info("relay {}: no unpublished row is left on a shard no relay owns", config.owner());
    }
    finding = found;
  }
}
