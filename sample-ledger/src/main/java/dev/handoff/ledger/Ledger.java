package dev.handoff.ledger;

import dev.handoff.consumer.InboundMessage;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Books charges: one {@code charge} row per payment message, written on the caller's transaction in one statement
 * for a whole batch. Nothing here prevents a second charge for the same payment: that is the inbox's job (see
 * {@link LedgerConsumer}), and ledger-demo's {@code NaiveConsumer} shows what happens without it. This class is
 * thread-safe.
 */
public final class Ledger {

  private final String ledgerName;
  private final String insert;

  /**
   * @param schema the schema of the {@code payment} and {@code charge} tables
   * @param ledgerName the name written in {@code charge.ledger}: the consumer group that books the charges
   */
  public Ledger(String schema, String ledgerName) {
    LedgerMigrations.requireValidSchema(schema);
    this.ledgerName = ledgerName;
    String from = " FROM unnest(?::varchar[], ?::uuid[], ?::bigint[]) AS m(payment_id, message_id, amount_cents)";
    String notPoison = " WHERE NOT EXISTS (SELECT 1 FROM " + schema + ".payment p"
        + " WHERE p.payment_id = m.payment_id AND p.poison)";
    String into = "INSERT INTO " + schema + ".charge (ledger, payment_id, message_id, amount_cents)"
        + " SELECT ?, m.payment_id, m.message_id, m.amount_cents";
    // One round trip: the charges of every payment that is not flagged poison, returning who was charged.
    this.insert = into + from + notPoison + " RETURNING payment_id";
  }

  /** The name of this ledger (its consumer group). */
  public String name() {
    return ledgerName;
  }

  /**
   * The handler of {@link LedgerConsumer}: charges every message of the batch, or throws if one of them is a
   * poison payment (handoff then rolls the batch back, bisects it and dead-letters the poison message after its
   * last delivery).
   *
   * @throws PoisonPaymentException naming the payments the ledger refuses
   * @throws IllegalArgumentException if a message is not a payment
   */
  public void charge(Connection tx, List<InboundMessage> messages) throws SQLException {
    List<PaymentEvents.Charged> charges = read(messages);
    List<String> chargedIds = insert(tx, charges);
    if (chargedIds.size() != charges.size()) {
      Set<String> charged = Set.copyOf(chargedIds);
      Set<String> refused = new LinkedHashSet<>();
      for (PaymentEvents.Charged c : charges) {
        if (!charged.contains(c.paymentId())) {
          refused.add(c.paymentId());
        }
      }
      throw new PoisonPaymentException(refused);
    }
  }

  /**
   * What a naive consumer does: charges every message of the batch except poison payments, which it drops
   * silently.
   *
   * @return how many charges were written
   */
  public int chargeSkippingPoison(Connection tx, List<PaymentEvents.Charged> charges) throws SQLException {
    return insert(tx, charges).size();
  }

  static List<PaymentEvents.Charged> read(List<InboundMessage> messages) {
    List<PaymentEvents.Charged> charges = new ArrayList<>(messages.size());
    for (InboundMessage m : messages) {
      charges.add(PaymentEvents.read(m.payloadAsString(), m.messageId()));
    }
    return charges;
  }

  private List<String> insert(Connection tx, List<PaymentEvents.Charged> charges) throws SQLException {
    int n = charges.size();
    String[] ids = new String[n];
    UUID[] messageIds = new UUID[n];
    Long[] amounts = new Long[n];
    for (int i = 0; i < n; i++) {
      ids[i] = charges.get(i).paymentId();
      messageIds[i] = charges.get(i).messageId();
      amounts[i] = charges.get(i).amountCents();
    }
    List<String> charged = new ArrayList<>(n);
    try (PreparedStatement ps = tx.prepareStatement(insert)) {
      Array a1 = tx.createArrayOf("varchar", ids);
      Array a2 = tx.createArrayOf("uuid", messageIds);
      Array a3 = tx.createArrayOf("bigint", amounts);
      ps.setString(1, ledgerName);
      ps.setArray(2, a1);
      ps.setArray(3, a2);
      ps.setArray(4, a3);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          charged.add(rs.getString(1));
        }
      }
    }
    return charged;
  }
}
