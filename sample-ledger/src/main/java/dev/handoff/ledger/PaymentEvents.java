package dev.handoff.ledger;

import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The topic the payment service writes and the ledger reads, and the JSON of its messages:
 * {@code {"payment_id":"p-1","account":"acct-7","amount_cents":1250}}.
 */
public final class PaymentEvents {

  /** The topic of payment messages. */
  public static final String TOPIC = "payments";

  /** The type of the message a new payment sends. */
  public static final String CREATED = "payment.created";

  /** Shards of the topic: producers and the relay must agree. Payments with one ID always land in one shard. */
  public static final int SHARDS = 4;

  /** The topic as producers, the relay and consumers configure it. */
  public static final TopicConfig TOPIC_CONFIG = TopicConfig.of(TOPIC).withShards(SHARDS);

  private static final Pattern JSON = Pattern.compile(
      "\\{\"payment_id\":\"([^\"]+)\",\"account\":\"([^\"]+)\",\"amount_cents\":(\\d+)}");

  private PaymentEvents() {}

  /** A payment as the ledger reads it from a message. */
  public record Charged(String paymentId, String account, long amountCents, UUID messageId) {}

  /** The message announcing {@code payment}, keyed by its payment ID. */
  public static Message created(Payment payment) {
    return Message.builder(TOPIC, CREATED)
        .key(payment.paymentId())
        .jsonPayload("{\"payment_id\":\"" + payment.paymentId() + "\",\"account\":\"" + payment.account()
            + "\",\"amount_cents\":" + payment.amountCents() + "}")
        .build();
  }

  /**
   * Reads a payment message's payload.
   *
   * @throws IllegalArgumentException if it is not a payment message this code wrote
   */
  public static Charged read(String json, UUID messageId) {
    Matcher m = JSON.matcher(json);
    if (!m.matches()) {
      throw new IllegalArgumentException("message " + messageId + " is not a payment: " + abbreviate(json));
    }
    return new Charged(m.group(1), m.group(2), Long.parseLong(m.group(3)), messageId);
  }

  private static String abbreviate(String s) {
    return s.length() <= 80 ? s : s.substring(0, 77) + "...";
  }
}
