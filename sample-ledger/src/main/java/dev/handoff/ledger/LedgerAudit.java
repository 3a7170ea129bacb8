package dev.handoff.ledger;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The audit behind {@code verify}: every payment that is not poison has exactly one charge in the ledger, and no
 * charge lacks a payment. A payment charged more than once is diagnosed the way the seed article does it, by its
 * message IDs: the same message ID on both charges means one message was <b>redelivered</b> and charged again (a
 * consumer without an inbox, or a purged inbox); different message IDs mean the <b>producer sent twice</b> (no inbox
 * can tell two messages apart: look at the producer).
 */
public final class LedgerAudit {

  /** How many examples of each problem an audit lists. */
  public static final int EXAMPLES = 10;

  private LedgerAudit() {}

  /** Why a payment was charged more than once. */
  public enum Cause {
    /** One message charged several times: a redelivery that no inbox absorbed. */
    REDELIVERY,
    /** Several messages for one payment, one charge each: the producer sent twice. */
    PRODUCER_SENT_TWICE,
    /** Both at once. */
    BOTH;

    public String label() {
      return name().toLowerCase().replace('_', ' ');
    }
  }

  /**
   * A payment charged more than once.
   *
   * @param messageIds the message ID of every charge, in charge order (repeats included)
   */
  public record Duplicate(String paymentId, int charges, List<UUID> messageIds, Cause cause) {

    public long distinctMessages() {
      return messageIds.stream().distinct().count();
    }
  }

  /**
   * What the audit found.
   *
   * @param ledger the ledger (consumer group) audited
   * @param payments payments in the table
   * @param poison of which flagged poison (the ledger refuses them; they are not expected to be charged)
   * @param charges charges booked by this ledger
   * @param missing payments that are not poison and have no charge
   * @param duplicated payments with more than one charge
   * @param extraCharges charges beyond the first, over all duplicated payments
   * @param byRedelivery duplicated payments whose extra charges repeat a message ID
   * @param byProducer duplicated payments whose charges all carry different message IDs
   * @param orphans charges whose payment does not exist
   * @param deadLetters dead letters of this ledger's group still dead
   */
  public record Result(String ledger, long payments, long poison, long charges, long missing, long duplicated,
      long extraCharges, long byRedelivery, long byProducer, long orphans, long deadLetters,
      List<Duplicate> duplicates, List<String> missingExamples) {

    /** Whether the ledger is right: nothing missing, nothing charged twice, no charge without a payment. */
    public boolean passed() {
      return missing == 0 && duplicated == 0 && orphans == 0;
    }

    /** The result as a JSON-ready map. */
    public Map<String, Object> toMap() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("passed", passed());
      m.put("ledger", ledger);
      m.put("payments", payments);
      m.put("poison", poison);
      m.put("charges", charges);
      m.put("missing", missing);
      m.put("duplicated", duplicated);
      m.put("extra_charges", extraCharges);
      m.put("duplicated_by_redelivery", byRedelivery);
      m.put("duplicated_by_producer", byProducer);
      m.put("orphans", orphans);
      m.put("dead_letters", deadLetters);
      List<Object> dups = new ArrayList<>();
      for (Duplicate d : duplicates) {
        Map<String, Object> x = new LinkedHashMap<>();
        x.put("payment_id", d.paymentId());
        x.put("charges", d.charges());
        x.put("message_ids", d.messageIds());
        x.put("cause", d.cause().label());
        dups.add(x);
      }
      m.put("duplicate_examples", dups);
      m.put("missing_examples", missingExamples);
      return m;
    }

    /** The result for people: counts, then each problem with its diagnosis. */
    public List<String> lines() {
      List<String> out = new ArrayList<>();
      out.add("verify ledger '" + ledger + "': " + (passed() ? "PASS" : "FAIL"));
      out.add(row("payments", payments, poison + " poison, refused by the ledger and not expected to be charged"));
      out.add(row("charges", charges, null));
      out.add(row("missing", missing, "payments (not poison) without a charge"));
      out.add(row("duplicated", duplicated, "payments charged more than once (" + extraCharges + " extra charges: "
          + byRedelivery + " by redelivery, " + byProducer + " because the producer sent twice)"));
      out.add(row("orphans", orphans, "charges without a payment"));
      out.add(row("dead letters", deadLetters, "see handoff.jar's 'dlq list --group " + ledger + "'"));
      for (Duplicate d : duplicates) {
        out.add("  " + d.paymentId() + " charged " + d.charges() + " times: " + diagnosis(d));
      }
      for (String id : missingExamples) {
        out.add("  " + id + " has no charge");
      }
      return out;
    }

    private static String row(String label, long n, String note) {
      return String.format("%-13s %,9d%s", label, n, note == null ? "" : "  " + note);
    }

    private static String diagnosis(Duplicate d) {
      return switch (d.cause()) {
        case REDELIVERY -> "redelivery: one message (" + d.messageIds().get(0) + ") charged again; an inbox"
            + " marker per message ID would have skipped it";
        case PRODUCER_SENT_TWICE -> "the producer sent twice: " + d.charges() + " different message IDs "
            + d.messageIds() + "; look at the producer, no inbox can tell them apart";
        case BOTH -> "redelivery and a producer that sent twice: " + d.distinctMessages() + " messages "
            + d.messageIds();
      };
    }
  }

  /** Audits ledger {@code ledger} (a consumer group) in {@code schema}. */
  public static Result audit(DataSource dataSource, String schema, String ledger) {
    String s = LedgerMigrations.requireValidSchema(schema);
    String perPayment = "SELECT payment_id, count(*) AS n, count(DISTINCT message_id) AS m FROM " + s
        + ".charge WHERE ledger = ? GROUP BY payment_id";
    try (Connection c = dataSource.getConnection()) {
      long[] payments = longs(c, "SELECT count(*), count(*) FILTER (WHERE poison) FROM " + s + ".payment");
      long charges = longs(c, "SELECT count(*) FROM " + s + ".charge WHERE ledger = ?", ledger)[0];
      long missing = longs(c, "SELECT count(*) FROM " + s + ".payment p WHERE NOT p.poison AND NOT EXISTS"
          + " (SELECT 1 FROM " + s + ".charge c WHERE c.ledger = ? AND c.payment_id = p.payment_id)", ledger)[0];
      long[] dup = longs(c, "SELECT count(*), coalesce(sum(n - 1), 0), count(*) FILTER (WHERE m < n),"
          + " count(*) FILTER (WHERE m = n) FROM (" + perPayment + ") x WHERE n > 1", ledger);
      long orphans = longs(c, "SELECT count(*) FROM " + s + ".charge c WHERE c.ledger = ? AND NOT EXISTS"
          + " (SELECT 1 FROM " + s + ".payment p WHERE p.payment_id = c.payment_id)", ledger)[0];
      long dead = longs(c, "SELECT count(*) FROM " + s + ".dead_letter WHERE consumer_group = ? AND status = 'dead'",
          ledger)[0];
      // The examples are looked up only when there is something to show: with nothing missing, "the first ten
      // missing in payment order" has the planner walk every payment and probe the charges for each.
      List<Duplicate> examples = new ArrayList<>();
      if (dup[0] > 0) {
        try (PreparedStatement ps = c.prepareStatement("SELECT payment_id, array_agg(message_id ORDER BY id) FROM "
            + s + ".charge WHERE ledger = ? GROUP BY payment_id HAVING count(*) > 1 ORDER BY payment_id LIMIT "
            + EXAMPLES)) {
          ps.setString(1, ledger);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              Array a = rs.getArray(2);
              List<UUID> ids = Arrays.asList((UUID[]) a.getArray());
              long distinct = ids.stream().distinct().count();
              Cause cause = distinct == 1 ? Cause.REDELIVERY
                  : distinct == ids.size() ? Cause.PRODUCER_SENT_TWICE : Cause.BOTH;
              examples.add(new Duplicate(rs.getString(1), ids.size(), List.copyOf(ids), cause));
            }
          }
        }
      }
      List<String> missingExamples = new ArrayList<>();
      if (missing > 0) {
        try (PreparedStatement ps = c.prepareStatement("SELECT payment_id FROM " + s + ".payment p WHERE NOT p.poison"
            + " AND NOT EXISTS (SELECT 1 FROM " + s + ".charge c WHERE c.ledger = ? AND c.payment_id = p.payment_id)"
            + " ORDER BY payment_id LIMIT " + EXAMPLES)) {
          ps.setString(1, ledger);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              missingExamples.add(rs.getString(1));
            }
          }
        }
      }
      // "by redelivery": some message ID repeats (m < n); "by producer": every charge has its own message (m = n).
      return new Result(ledger, payments[0], payments[1], charges, missing, dup[0], dup[1], dup[2], dup[3], orphans,
          dead, examples, missingExamples);
    } catch (SQLException e) {
      throw new LedgerException("the audit of ledger '" + ledger + "' failed: " + e.getMessage(), e);
    }
  }

  private static long[] longs(Connection c, String sql, Object... params) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        long[] out = new long[rs.getMetaData().getColumnCount()];
        for (int i = 0; i < out.length; i++) {
          out[i] = rs.getLong(i + 1);
        }
        return out;
      }
    }
  }
}
