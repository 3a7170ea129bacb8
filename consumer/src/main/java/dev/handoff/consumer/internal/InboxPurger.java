package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.InboxPurgeRefusedException;
import dev.handoff.consumer.InboxPurgeResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Purges a group's inbox markers, never one whose message can still come back. Two rules, both checked per marker
 * in the deleting statement: the message is below what Redis still holds for the topic (the oldest entry of its
 * streams, or the lowest element of its lists), and the outbox no longer holds it (a replay from the outbox or a
 * re-publish after Redis lost data reads the outbox). The dedup window only picks the candidates.
 *
 * <p>Thread-safe: it keeps no state between calls.
 */
final class InboxPurger {

  private static final Logger log = LoggerFactory.getLogger(InboxPurger.class);

  /**
   * The position below which Redis holds nothing of the topic, {ms, seq}.
   *
   * @throws InboxPurgeRefusedException when it cannot be known (a stream is missing)
   */
  interface RedisFloor extends Supplier<long[]> {}

  private final ConsumerConfig config;
  private final Clock clock;
  private final DataSource dataSource;
  private final InboxQueries inbox;
  private final RedisFloor redisFloor;

  InboxPurger(ConsumerConfig config, Clock clock, DataSource dataSource, InboxQueries inbox, RedisFloor redisFloor) {
    this.config = config;
    this.clock = clock;
    this.dataSource = dataSource;
    this.inbox = inbox;
    this.redisFloor = redisFloor;
  }

  /** Deletes the markers processed before {@code before}, or refuses, deleting nothing, if one must stay. */
  long purgeOrRefuse(Instant before) {
    long[] floor = redisFloor.get();
    try (Connection c = dataSource.getConnection()) {
      long retained = inbox.countRetained(c, config.group(), before, floor);
      if (retained > 0) {
        throw new InboxPurgeRefusedException("inbox purge of consumer group '" + config.group() + "' refused: "
            + retained + " marker(s) processed before " + before + " belong to messages still retained in Redis for"
            + " topic '" + config.topic().name() + "' (oldest retained " + floor[0] + "-" + floor[1] + "); dropping"
            + " them would let a redelivery or replay run their handlers again. Purge an older window, or trim the"
            + " streams first", retained);
      }
      long inOutbox = inbox.countInOutbox(c, config.group(), before);
      if (inOutbox > 0) {
        throw new InboxPurgeRefusedException("inbox purge of consumer group '" + config.group() + "' refused: "
            + inOutbox + (inOutbox >= 100_000 ? "+" : "") + " marker(s) processed before " + before
            + " belong to messages the outbox still holds; a replay from the outbox, or the relay publishing them"
            + " again after Redis lost data, would run their handlers again. Purge a window older than the outbox"
            + " retention", inOutbox);
      }
      long deleted = deleteAll(c, before, floor);
      log.info("Consumer group '{}': purged {} inbox marker(s) processed before {}", config.group(), deleted,
          before);
      return deleted;
    } catch (SQLException e) {
      throw new ConsumerException("inbox purge of consumer group '" + config.group() + "' failed", e);
    }
  }

  /**
   * Deletes every marker past the dedup window that no rule keeps, and warns once, naming the rule, when some
   * had to stay.
   */
  InboxPurgeResult purgeExpired() {
    Instant before = clock.instant().minus(config.upkeep().inboxRetention().dedupWindow());
    try (Connection c = dataSource.getConnection()) {
      if (!inbox.anyBefore(c, config.group(), before)) {
        return new InboxPurgeResult(before, 0, 0, 0);
      }
      long[] floor;
      try {
        floor = redisFloor.get();
      } catch (InboxPurgeRefusedException e) {
        log.warn("Consumer group '{}': inbox purge skipped: {}", config.group(), e.getMessage());
        return new InboxPurgeResult(before, 0, -1, 0);
      }
      long deleted = deleteAll(c, before, floor);
      long forRedis = inbox.countRetained(c, config.group(), before, floor);
      long forOutbox = inbox.countInOutbox(c, config.group(), before);
      InboxPurgeResult result = new InboxPurgeResult(before, deleted, forRedis, forOutbox);
      if (result.keptAny()) {
        log.warn("Consumer group '{}': {} inbox marker(s) past the dedup window of {} were kept, because their"
                + " messages can still come back: {} held by Redis for topic '{}' (a stream or list still holds"
                + " them), {} held by the outbox (the outbox purge is behind, or the outbox retention is longer"
                + " than the {} this consumer was told). Rule: a marker may go only when neither holds its message",
            config.group(), forRedis + forOutbox, config.upkeep().inboxRetention().dedupWindow(), forRedis,
            config.topic().name(), forOutbox, config.upkeep().inboxRetention().outboxRetention());
      } else if (deleted > 0) {
        log.info("Consumer group '{}': purged {} inbox marker(s) processed before {}", config.group(), deleted,
            before);
      }
      return result;
    } catch (SQLException e) {
      throw new ConsumerException("inbox purge of consumer group '" + config.group() + "' failed", e);
    }
  }

  private long deleteAll(Connection c, Instant before, long[] floor) throws SQLException {
    long deleted = 0;
    int n;
    do {
      n = inbox.purgeBatch(c, config.group(), before, floor);
      deleted += n;
    } while (n == 10_000);
    return deleted;
  }
}
