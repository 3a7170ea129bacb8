package dev.handoff.consumer;

import java.time.Duration;
import java.util.UUID;

/**
 * Callbacks for metrics and logging. Every method has a no-op default, so an implementation overrides only what
 * it needs; {@link #NOOP} does nothing at all.
 *
 * <p>Callbacks run on the consumer's worker threads right after the event (after the commit for outcomes that a
 * commit decides), must be fast and must not throw (a thrown exception is logged and ignored). They are not called
 * for work lost to a JVM crash, and a message can be reported more than once across deliveries (for instance
 * {@code failed} on every failed attempt).
 */
public interface ConsumerListener {

  /** A listener that ignores everything. */
  ConsumerListener NOOP = new ConsumerListener() {};

  /** The handler's effects and the inbox marker of {@code message} were committed. */
  default void handled(InboundMessage message) {}

  /** {@code message} already had an inbox marker in this group: the handler was skipped and the entry acknowledged. */
  default void duplicate(InboundMessage message) {}

  /** The handler threw; the entry stays pending and becomes claimable again after {@code backoff}. */
  default void failed(InboundMessage message, Throwable error, Duration backoff) {}

  /**
   * The entry went to the dead-letter table (after {@code maxDeliveries}, or at once when it could not be
   * decoded) and was acknowledged.
   *
   * @param messageId the message ID, or {@code null} when the entry could not be decoded far enough to know it
   */
  default void deadLettered(String streamKey, String streamId, UUID messageId, String error) {}

  /** {@code count} abandoned entries (idle for at least {@code minIdle}) were claimed by this consumer. */
  default void reclaimed(String streamKey, int count) {}

  /** A pending entry's payload was gone from the stream (trimmed or deleted): recorded as lost, then acknowledged. */
  default void lost(String streamKey, String streamId) {}

  /** Another consumer took over an entry this one was still handling (its lease could not be renewed in time). */
  default void leaseLost(String streamKey, String streamId) {}

  /**
   * The consumer group had vanished from {@code streamKey} (Redis lost its data) and was recreated from the
   * beginning.
   */
  default void groupRecreated(String streamKey) {}

  /** A batch transaction committed: {@code size} entries settled in {@code elapsed}, handler time included. */
  default void batchCommitted(int size, Duration elapsed) {}

  /**
   * The environment failed under {@code worker} (a database or Redis connection, a privilege, a table, a handler's
   * {@link RetryLaterException}): it holds its batch, counts no delivery and retries with backoff. Called once per
   * pause, not per attempt.
   */
  default void paused(String worker, Throwable cause) {}

  /** {@code worker}'s first attempt since its {@linkplain #paused pause} went through, after {@code pausedFor}. */
  default void resumed(String worker, Duration pausedFor) {}

  /**
   * A {@linkplain HandoffConsumer#replayFromOutbox replay from the outbox} settled another page; {@code soFar} holds
   * its totals up to here. Called on the thread that runs the replay.
   */
  default void replayProgress(ReplayResult soFar) {}
}
