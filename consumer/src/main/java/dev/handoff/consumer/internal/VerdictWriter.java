package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.internal.Settled.Dead;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes, in a batch's transaction, the verdicts that are not a handler's effect: a dead letter with its marker of
 * outcome dead, and a lost entry (its payload trimmed or deleted from Redis), recovered from the outbox when the
 * outbox still holds it. Each write is fenced by the inbox marker, so that a message processed meanwhile is
 * counted as a duplicate rather than dead-lettered.
 *
 * <p>Thread-safe: it keeps no state between calls.
 */
final class VerdictWriter {

  private static final Logger log = LoggerFactory.getLogger(VerdictWriter.class);

  private final ConsumerConfig config;
  private final DataSource dataSource;
  private final InboxQueries inbox;
  private final DeadLetterQueries deadLetters;
  private final OutboxQueries outbox;
  private final String group;

  VerdictWriter(ConsumerConfig config, DataSource dataSource, InboxQueries inbox) {
    this.config = config;
    this.dataSource = dataSource;
    this.inbox = inbox;
    this.deadLetters = new DeadLetterQueries(config.schema());
    this.outbox = new OutboxQueries(config.schema());
    this.group = config.group();
  }

  /** Dead-letters one entry with a marker of outcome dead; false if the message was processed already. */
  boolean writeDead(Connection c, Dead x) throws SQLException {
    Delivery d = x.delivery();
    UUID id = d.messageId();
    if (id != null && inbox.insert(c, group, List.of(id), List.of(d.id), InboxQueries.DEAD).isEmpty()) {
      return false;
    }
    DeadLetterQueries.Row row = d.message != null
        ? DeadLetterQueries.Row.of(d.message, x.error())
        : new DeadLetterQueries.Row(id, config.topic().name(), d.streamKey, d.id, parseLong(d.field("outbox_id")),
            text(d.field("key")), text(d.field("type")), null, d.field("payload"), null, d.deliveries, x.error());
    deadLetters.insert(c, group, row);
    return true;
  }

  /** Records a lost entry; false when the outbox shows it was the message of a marker we already have. */
  boolean writeLost(Connection c, Delivery d, InboundMessage recovered) throws SQLException {
    String error = "lost: the stream entry was trimmed or deleted before this group acknowledged it";
    if (recovered != null) {
      if (inbox.insert(c, group, List.of(recovered.messageId()), List.of(d.id), InboxQueries.DEAD).isEmpty()) {
        return false;
      }
      deadLetters.insert(c, group, DeadLetterQueries.Row.of(recovered, error
          + "; the message was recovered from the outbox and can be retried"));
      return true;
    }
    deadLetters.insert(c, group, new DeadLetterQueries.Row(null, config.topic().name(), d.streamKey, d.id, null,
        null, null, null, null, null, Math.max(0, d.deliveries), error));
    return true;
  }

  /** Looks lost entries up in the outbox, outside the batch transaction so that a failure cannot abort it. */
  Map<Delivery, InboundMessage> recoverLost(List<Delivery> lost) {
    Map<Delivery, InboundMessage> out = new IdentityHashMap<>();
    try (Connection c = dataSource.getConnection()) {
      for (Delivery d : lost) {
        InboundMessage m = outbox.find(c, config.topic().name(), d.shard, d.streamKey, d.id, d.deliveries);
        if (m != null) {
          out.put(d, m);
        }
      }
    } catch (SQLException | RuntimeException e) {
      log.debug("could not look lost entries up in the outbox of schema '{}'", config.schema(), e);
    }
    return out;
  }

  private static Long parseLong(byte[] value) {
    try {
      return value == null ? null : Long.parseLong(new String(value, StandardCharsets.UTF_8));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static String text(byte[] value) {
    return value == null ? null : new String(value, StandardCharsets.UTF_8);
  }
}
