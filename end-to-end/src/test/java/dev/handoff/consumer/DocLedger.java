package dev.handoff.consumer;

import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.AppendedMessage;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code ledger} of the docs' consumer examples ({@code ledger.charge(tx, message)}): one {@code charge} row per
 * message, written on the handler's transaction, and the producer side that appends the payments it charges. The
 * table has no unique key on purpose: a message charged twice shows as two rows.
 */
final class DocLedger {

  private final DataSource dataSource;
  private final String schema;
  private int paid;

  /**
   * A ledger on {@code dataSource}, whose search_path holds the {@code charge} table (created here), appending to
   * the outbox of handoff's schema {@code schema}.
   */
  DocLedger(DataSource dataSource, String schema) {
    this.dataSource = dataSource;
    this.schema = schema;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS charge (topic text NOT NULL, payment_id text NOT NULL,"
          + " amount_cents bigint NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The handler's effect: a charge of the message's payment, in the handler's transaction. */
  void charge(Connection tx, InboundMessage message) throws SQLException {
    charge(tx, message.topic(), message.key(), Long.parseLong(message.payloadAsString()));
  }

  /** The same for a handler that has only the payment's ID: charged 1 cent. */
  void charge(Connection tx, String topic, String paymentId) throws SQLException {
    charge(tx, topic, paymentId, 1);
  }

  private static void charge(Connection tx, String topic, String paymentId, long amountCents) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(
        "INSERT INTO charge (topic, payment_id, amount_cents) VALUES (?, ?, ?)")) {
      ps.setString(1, topic);
      ps.setString(2, paymentId);
      ps.setLong(3, amountCents);
      ps.executeUpdate();
    }
  }

  /**
   * Appends the next {@code n} payments to {@code topic} in one transaction: the i-th payment this ledger appends has
   * key {@code pay-i} and is {@code 100 + i} cents. Returns their message IDs, in order.
   */
  List<UUID> pay(TopicConfig topic, int n) {
    List<Message> messages = new ArrayList<>(n);
    for (int i = paid; i < paid + n; i++) {
      messages.add(Message.builder(topic.name(), "payment.created").key("pay-" + i).payload(Long.toString(100 + i))
          .build());
    }
    paid += n;
    Outbox outbox = Outbox.builder().schema(schema).topic(topic).build();
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      List<AppendedMessage> appended = outbox.appendAll(tx, messages);
      tx.commit();
      return appended.stream().map(AppendedMessage::messageId).toList();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The charges of {@code topic}. */
  long charges(String topic) {
    return queryLong("SELECT count(*) FROM charge WHERE topic = ?", topic);
  }

  /** The payments of {@code topic} charged more than once: always 0. */
  long doubleCharges(String topic) {
    return queryLong("SELECT count(*) FROM (SELECT payment_id FROM charge WHERE topic = ? GROUP BY payment_id"
        + " HAVING count(*) > 1) d", topic);
  }

  /** The sum charged on {@code topic}. */
  long chargedCents(String topic) {
    return queryLong("SELECT coalesce(sum(amount_cents), 0) FROM charge WHERE topic = ?", topic);
  }

  private long queryLong(String sql, String topic) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }
}
