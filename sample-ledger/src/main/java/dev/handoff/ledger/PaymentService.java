package dev.handoff.ledger;

import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Creates payments: in one transaction, the {@code payment} row and the outbox message that asks the ledger to
 * charge it. Either both commit or neither does, so the ledger never hears of a payment that does not exist and
 * never misses one that does.
 *
 * <p>Creating a payment whose ID exists already is a no-op: no second row and, above all, no second message. A
 * second message would carry a new message ID, which no inbox can recognise as the same payment: the double charge
 * that {@code verify} diagnoses as "the producer sent twice". This class is thread-safe.
 */
public final class PaymentService {

  private final DataSource dataSource;
  private final Outbox outbox;
  private final String insert;

  public PaymentService(DataSource dataSource, String schema) {
    this(dataSource, schema, PaymentEvents.TOPIC_CONFIG);
  }

  /** A payment service writing to {@code topic} (the payments topic with another shard count, say). */
  public PaymentService(DataSource dataSource, String schema, TopicConfig topic) {
    this.dataSource = dataSource;
    this.outbox = Outbox.builder().schema(schema).topic(topic).build();
    // ON CONFLICT DO NOTHING waits for a concurrent insert of the same ID and then skips it: exactly one wins.
    this.insert = "INSERT INTO " + LedgerMigrations.requireValidSchema(schema) + ".payment"
        + " (payment_id, account, amount_cents, poison)"
        + " SELECT * FROM unnest(?::varchar[], ?::varchar[], ?::bigint[], ?::boolean[])"
        + " ON CONFLICT (payment_id) DO NOTHING RETURNING payment_id";
  }

  /**
   * Creates one payment and its message.
   *
   * @return true if it was created, false if a payment with its ID existed already (nothing was written)
   */
  public boolean pay(Payment payment) {
    return payAll(List.of(payment)) == 1;
  }

  /**
   * Creates payments and their messages in one transaction (one statement for the rows, one for the messages).
   * Payments whose ID exists already are skipped.
   *
   * @return how many payments were created
   */
  public int payAll(List<Payment> payments) {
    if (payments.isEmpty()) {
      return 0;
    }
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try {
        Set<String> created = insertRows(tx, payments);
        List<Message> messages = new ArrayList<>(created.size());
        for (Payment p : payments) {
          if (created.remove(p.paymentId())) {
            messages.add(PaymentEvents.created(p));
          }
        }
        if (!messages.isEmpty()) {
          outbox.appendAll(tx, messages);
        }
        tx.commit();
        return messages.size();
      } catch (SQLException | RuntimeException e) {
        tx.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new LedgerException("could not create " + payments.size() + " payment(s): " + e.getMessage(), e);
    }
  }

  private Set<String> insertRows(Connection tx, List<Payment> payments) throws SQLException {
    int n = payments.size();
    String[] ids = new String[n];
    String[] accounts = new String[n];
    Long[] amounts = new Long[n];
    Boolean[] poison = new Boolean[n];
    for (int i = 0; i < n; i++) {
      Payment p = payments.get(i);
      ids[i] = p.paymentId();
      accounts[i] = p.account();
      amounts[i] = p.amountCents();
      poison[i] = p.poison();
    }
    Set<String> created = new HashSet<>();
    try (PreparedStatement ps = tx.prepareStatement(insert)) {
      Array a1 = tx.createArrayOf("varchar", ids);
      Array a2 = tx.createArrayOf("varchar", accounts);
      Array a3 = tx.createArrayOf("bigint", amounts);
      Array a4 = tx.createArrayOf("boolean", poison);
      ps.setArray(1, a1);
      ps.setArray(2, a2);
      ps.setArray(3, a3);
      ps.setArray(4, a4);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          created.add(rs.getString(1));
        }
      }
    }
    return created;
  }
}
