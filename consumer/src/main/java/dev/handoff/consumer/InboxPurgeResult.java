package dev.handoff.consumer;

import java.time.Instant;

/**
 * What a purge of the inbox markers past the dedup window did ({@link HandoffConsumer#purgeInbox()}).
 *
 * @param processedBefore the cut: markers processed before it were candidates
 * @param deleted markers deleted
 * @param keptForRedis candidates kept because a stream or list still holds their message, or may (a stream is
 *     missing: Redis may have lost it, and the relay would publish it again); -1 when the purge stopped there
 * @param keptForOutbox candidates kept because the outbox still holds their message (counted up to 100,000)
 */
public record InboxPurgeResult(Instant processedBefore, long deleted, long keptForRedis, long keptForOutbox) {

  /** Whether some markers past the window had to stay. */
  public boolean keptAny() {
    return keptForRedis != 0 || keptForOutbox != 0;
  }
}
