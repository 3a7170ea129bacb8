package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Finds the ghosts of a batch: messages whose outbox row this database does not have and whose absence no purge
 * explains. A consumer that shares the producer's database sees them only after the database went back in time (a
 * failover to an asynchronous standby that had not received the last commits): Redis holds messages whose
 * transactions the database no longer has, and applying one would act on a business change that never happened.
 *
 * <p>One read per batch, on a connection of its own, before the batch's transaction. Thread-safe.
 */
final class GhostCheck {

  /** The consumer's database has no trace of the topic at all: it is not the producer's, and cannot tell. */
  static final class NotTheProducersDatabase extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotTheProducersDatabase(String message) {
      super(message);
    }
  }

  private final DataSource dataSource;
  private final OutboxQueries outbox;
  private final String topic;
  private final String schema;
  /** Set once a look found this database holding the topic's rows; never unset. */
  private volatile boolean producersDatabase;

  GhostCheck(ConsumerConfig config, DataSource dataSource) {
    this.dataSource = dataSource;
    this.outbox = new OutboxQueries(config.schema());
    this.topic = config.topic().name();
    this.schema = config.schema();
  }

  /**
   * The ghosts among {@code candidates}, and why each is one.
   *
   * @throws NotTheProducersDatabase when every message looks like a ghost because this database never held a row
   *     of the topic
   */
  List<Settled.Dead> find(List<Delivery> candidates) throws SQLException {
    if (candidates.isEmpty()) {
      return List.of();
    }
    Long[] ids = new Long[candidates.size()];
    UUID[] messageIds = new UUID[candidates.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = candidates.get(i).message.outboxId();
      messageIds[i] = candidates.get(i).message.messageId();
    }
    try (Connection c = dataSource.getConnection()) {
      Set<Integer> ghosts = outbox.ghosts(c, topic, ids, messageIds);
      if (ghosts.size() < ids.length) {
        producersDatabase = true;
      } else if (!producersDatabase) {
        if (!outbox.everHeld(c, topic)) {
          throw new NotTheProducersDatabase("refuseGhosts is on, but schema '" + schema + "' of this consumer's"
              + " database never held an outbox row of topic '" + topic + "': the consumer does not share the"
              + " producer's database, so it cannot tell a ghost from a message; turn refuseGhosts off");
        }
        producersDatabase = true;
      }
      List<Settled.Dead> out = new ArrayList<>(ghosts.size());
      for (int i : ghosts) {
        Delivery d = candidates.get(i);
        out.add(new Settled.Dead(d, "ghost: outbox row " + ids[i] + " of message " + messageIds[i] + " (topic '"
            + topic + "') is not in this database and no purge accounts for it; the database lost the transaction"
            + " that appended it, as in a failover to a standby that had not received it (docs/guarantees.md, A"
            + " database failover). It was not applied: discard it, or retry it if its business change did happen"));
      }
      return out;
    }
  }
}
