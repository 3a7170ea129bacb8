package dev.handoff.consumer;

import java.time.Duration;
import java.util.Objects;

/**
 * How long a consumer group keeps its inbox markers, and whether it purges older ones by itself.
 *
 * <p>A marker is what makes a message that comes back harmless, so it must outlive every way back: redelivery and
 * {@code replayRetained()} while a stream or list still holds the message, and {@code replayFromOutbox} or the
 * relay's re-publishing after Redis lost data while the outbox still holds it, which is the outbox retention. So the
 * dedup window is never shorter than the outbox retention (refused when built), and by default is the outbox
 * retention plus {@link #DEFAULT_MARGIN}, which covers an outbox purge that runs behind. On top of the window, every
 * purge checks each marker: one whose message a stream (or list) or the outbox still holds is kept, whatever its age.
 *
 * <p>Immutable and thread-safe; {@code with...} return new values.
 *
 * @param dedupWindow markers processed longer ago than this may be purged (never shorter than
 *     {@code outboxRetention})
 * @param outboxRetention the relays' outbox retention ({@code RelayBuilder.outboxRetention}, 7 days by default);
 *     set it to what the relays use
 * @param purgeInterval how often a started consumer purges markers past the window (on its housekeeping thread, in
 *     batches of 10,000, off the message path)
 * @param automatic whether a started consumer purges by itself; off, only {@code purgeInbox()} calls purge
 */
public record InboxRetention(Duration dedupWindow, Duration outboxRetention, Duration purgeInterval,
    boolean automatic) {

  /** The outbox retention the relays use unless told otherwise. */
  public static final Duration DEFAULT_OUTBOX_RETENTION = Duration.ofDays(7);
  /** What the default dedup window adds to the outbox retention. */
  public static final Duration DEFAULT_MARGIN = Duration.ofDays(1);
  public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofMinutes(10);

  public InboxRetention {
    ConsumerConfig.requirePositive("outboxRetention", outboxRetention);
    ConsumerConfig.requirePositive("dedupWindow", dedupWindow);
    ConsumerConfig.requirePositive("purgeInterval", purgeInterval);
    if (dedupWindow.compareTo(outboxRetention) < 0) {
      throw new IllegalArgumentException("dedupWindow must be at least the outbox retention (" + outboxRetention
          + "), was " + dedupWindow + ": a message the outbox still holds can come back (a replay from the outbox,"
          + " or the relay publishing it again after Redis lost data) and must meet its marker");
    }
  }

  /** Outbox retention 7 days, dedup window 8 days, automatic purge every 10 minutes. */
  public static InboxRetention defaults() {
    return forOutboxRetention(DEFAULT_OUTBOX_RETENTION);
  }

  /** For relays with this outbox retention: the dedup window is it plus {@link #DEFAULT_MARGIN}. */
  public static InboxRetention forOutboxRetention(Duration outboxRetention) {
    Objects.requireNonNull(outboxRetention, "outboxRetention");
    return new InboxRetention(outboxRetention.plus(DEFAULT_MARGIN), outboxRetention, DEFAULT_PURGE_INTERVAL, true);
  }

  /** The same with another dedup window (at least the outbox retention). */
  public InboxRetention withDedupWindow(Duration window) {
    return new InboxRetention(window, outboxRetention, purgeInterval, automatic);
  }

  /** The same with another automatic purge interval. */
  public InboxRetention withPurgeInterval(Duration interval) {
    return new InboxRetention(dedupWindow, outboxRetention, interval, automatic);
  }

  /** The same with the automatic purge on or off. */
  public InboxRetention withAutomaticPurge(boolean on) {
    return new InboxRetention(dedupWindow, outboxRetention, purgeInterval, on);
  }
}
