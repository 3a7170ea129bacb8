package dev.handoff.consumer;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * What a handoff consumer does on either transport: {@link StreamConsumer} (Redis Streams and consumer groups) and
 * {@link ListConsumer} (Redis lists as a reliable queue) both are one, so that code which only starts, polls, closes,
 * retries, replays and purges need not know which it has. Each transport's own interface documents its guarantees;
 * the inbox rule is the same: a message's effects commit at most once per group, with its marker.
 *
 * <p>Implementations are thread-safe. A consumer is started once; {@link #pollOnce()} is the deterministic
 * alternative for tests and must not be mixed with {@link #start()}.
 */
public interface HandoffConsumer extends AutoCloseable {

  /** Starts the workers and the housekeeping. @throws IllegalStateException if started, polled or closed before */
  void start();

  /** One step of one worker, on the caller's thread, for tests. @throws IllegalStateException if started or closed */
  PollResult pollOnce();

  /** Re-runs the handler on one dead letter of this group, idempotently; see {@link StreamConsumer#retry(long)}. */
  boolean retry(long deadLetterId);

  /** Retries every retryable dead letter of this group, oldest first; returns how many handlers ran. */
  int retryAll();

  /** The newest dead letters of this group, at most {@code limit}. */
  List<DeadLetter> deadLetters(int limit);

  /** What the group holds now; see the transport's own status type. */
  GroupStatus status();

  /** Runs a range of the outbox through this consumer's own path; see {@link StreamConsumer#replayFromOutbox}. */
  ReplayResult replayFromOutbox(OutboxRange range);

  /** Which of {@code messageIds} this group processed (an inbox marker of outcome processed). */
  Set<UUID> processed(Collection<UUID> messageIds);

  /** Deletes the markers processed before {@code processedBefore}, or refuses; see {@link StreamConsumer#purgeInbox(Instant)}. */
  long purgeInbox(Instant processedBefore);

  /** One run of the automatic inbox purge, now; see {@link InboxRetention}. */
  InboxPurgeResult purgeInbox();

  /** The immutable configuration this consumer was built with. */
  ConsumerConfig config();

  /** Closes with a deadline of {@code block} plus a few seconds; see {@link #close(Duration)}. */
  @Override
  void close();

  /**
   * Stops the workers, waiting up to {@code deadline} for their batches to settle; past it, abandons them (they roll
   * back and stay in Redis for another consumer). A later close reports the first close's outcome.
   *
   * @return false if some work was abandoned
   */
  boolean close(Duration deadline);
}
