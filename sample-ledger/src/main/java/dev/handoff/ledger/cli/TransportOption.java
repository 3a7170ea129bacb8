package dev.handoff.ledger.cli;

import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerException;
import java.util.Locale;

/** Reads {@code --transport} (or {@code HANDOFF_TRANSPORT}): {@code stream} or {@code list}. */
public final class TransportOption {

  /** The picocli default of every {@code --transport} option that follows the environment. */
  public static final String DEFAULT = "${env:HANDOFF_TRANSPORT:-stream}";

  private TransportOption() {}

  /** The transport {@code value} names, or a one-line error. */
  public static Transport parse(String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    return switch (v) {
      case "stream", "streams" -> Transport.STREAM;
      case "list", "lists" -> Transport.LIST;
      default -> throw new LedgerException("--transport (or HANDOFF_TRANSPORT) must be stream or list, was '"
          + value + "'");
    };
  }
}
