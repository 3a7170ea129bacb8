package dev.handoff.consumer;

/**
 * An inbox purge was refused because it would have dropped the markers of messages that can still come back: a
 * stream or list still holds them (or may hold them again, when Redis lost a stream), or the outbox still holds
 * them (a replay from the outbox, or the relay publishing them again). Their handlers would then run a second
 * time. Nothing was deleted.
 */
public final class InboxPurgeRefusedException extends ConsumerException {

  private static final long serialVersionUID = 1L;

  private final long stillRetained;

  public InboxPurgeRefusedException(String message, long stillRetained) {
    super(message);
    this.stillRetained = stillRetained;
  }

  /** How many of the markers the purge would have dropped belong to messages that can still come back. */
  public long stillRetained() {
    return stillRetained;
  }
}
