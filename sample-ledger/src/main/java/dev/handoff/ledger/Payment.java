package dev.handoff.ledger;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A payment to be charged.
 *
 * @param paymentId the business key: the payment service refuses to create it twice, and it is the message's
 *     ordering key
 * @param account the account charged
 * @param amountCents the amount, in cents, positive
 * @param poison whether the ledger must refuse it (a frozen account); used to show dead letters
 */
public record Payment(String paymentId, String account, long amountCents, boolean poison) {

  /** What a payment ID and an account look like. */
  public static final Pattern ID_PATTERN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}");

  public Payment {
    requireId("paymentId", paymentId);
    requireId("account", account);
    if (amountCents <= 0) {
      throw new IllegalArgumentException("amountCents must be positive, was " + amountCents);
    }
  }

  private static void requireId(String what, String value) {
    Objects.requireNonNull(value, what);
    if (!ID_PATTERN.matcher(value).matches()) {
      throw new IllegalArgumentException(what + " must match " + ID_PATTERN.pattern() + ", was '" + value + "'");
    }
  }
}
