package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentEvents;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;

/**
 * The producer's transaction without handoff, the baseline of the payment service: the payment insert and a plain
 * insert of the outbox row.
 */
record RawProducerBaseline(String schema, int shards) {

  /** Inserts {@code batch} on {@code tx}, which the caller commits. */
  void insert(Connection tx, List<Payment> batch) throws SQLException {
    insertPayments(tx, batch);
    String outbox = "INSERT INTO " + schema + ".outbox (message_id, topic, shard, message_key, type, payload, headers)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?::jsonb)";
    int n = batch.size();
    try (PreparedStatement ps = tx.prepareStatement(outbox)) {
      for (Payment p : batch) {
        ps.setObject(1, UUID.randomUUID());
        ps.setString(2, PaymentEvents.TOPIC);
        ps.setInt(3, Math.floorMod(p.paymentId().hashCode(), shards));
        ps.setString(4, p.paymentId());
        ps.setString(5, PaymentEvents.CREATED);
        ps.setBytes(6, BenchPayments.payload(p));
        ps.setString(7, "{\"content-type\":\"application/json\"}");
        if (n == 1) {
          ps.executeUpdate();
        } else {
          ps.addBatch();
        }
      }
      if (n > 1) {
        ps.executeBatch();
      }
    }
  }

  /** Inserts the payments of {@code batch} alone on {@code tx}: the producer's transaction without an outbox row. */
  void insertPayments(Connection tx, List<Payment> batch) throws SQLException {
    String payment = "INSERT INTO " + schema + ".payment (payment_id, account, amount_cents, poison)"
        + " SELECT * FROM unnest(?::varchar[], ?::varchar[], ?::bigint[], ?::boolean[])"
        + " ON CONFLICT (payment_id) DO NOTHING RETURNING payment_id";
    int n = batch.size();
    String[] ids = new String[n];
    String[] accounts = new String[n];
    Long[] amounts = new Long[n];
    Boolean[] poison = new Boolean[n];
    for (int i = 0; i < n; i++) {
      ids[i] = batch.get(i).paymentId();
      accounts[i] = batch.get(i).account();
      amounts[i] = batch.get(i).amountCents();
      poison[i] = false;
    }
    try (PreparedStatement ps = tx.prepareStatement(payment)) {
      ps.setArray(1, tx.createArrayOf("varchar", ids));
      ps.setArray(2, tx.createArrayOf("varchar", accounts));
      ps.setArray(3, tx.createArrayOf("bigint", amounts));
      ps.setArray(4, tx.createArrayOf("boolean", poison));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rs.getString(1);
        }
      }
    }
  }
}
