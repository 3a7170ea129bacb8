package dev.handoff.consumer;

/**
 * An inbox purge was refused because it would have dropped the markers of messages that the stream still holds
 * (or may hold again): a redelivery or replay of those messages would then run their handlers a second time.
 * Nothing was deleted.
 */
public final class InboxPurgeRefusedException extends ConsumerException {

  private static final long serialVersionUID = 1L;

  private final long stillRetained;

  public InboxPurgeRefusedException(String message, long stillRetained) {
    super(message);
    this.stillRetained = stillRetained;
  }

  /** How many of the markers the purge would have dropped belong to messages still retained in the stream. */
  public long stillRetained() {
    return stillRetained;
  }
}
