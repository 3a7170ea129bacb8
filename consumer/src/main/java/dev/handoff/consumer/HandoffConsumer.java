package dev.handoff.consumer;

import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.consumer.status.GroupStatus;
import dev.handoff.core.Health;
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

  /**
   * Runs the consumer's upkeep once, now, on the caller's thread, whatever its schedules: a stream consumer renews
   * the leases of the entries its workers hold (as it does every {@code leaseRenewInterval}); then the group's open
   * retry and replay requests ({@link dev.handoff.consumer.admin.DeadLetterAdmin}) run through this consumer's
   * handler (as every {@code retryRequestInterval}); then its gauges are refreshed when it has a
   * {@code meterRegistry} (as every {@code metricsRefreshInterval}). For tests and tools that must not depend on
   * those schedules, and for a consumer that is only polled. Safe beside a started consumer.
   *
   * @return how many retry and replay requests ran (retried, failed again and recorded, or replayed)
   * @throws IllegalStateException once the consumer is closed
   */
  int maintainOnce();

  /**
   * Re-runs the handler on dead letter {@code deadLetterId} of this group, idempotently: in one transaction its
   * marker turns from {@code dead} to {@code processed}, the handler runs and the dead letter's status becomes
   * {@code retried}. A message whose marker says {@code processed} already is not handled again.
   *
   * @return whether the handler ran ({@code false} if the dead letter was already retried or the message was
   *     already processed)
   * @throws ConsumerException if the dead letter does not exist, cannot be retried (undecodable or lost entry) or
   *     the handler failed (it then stays dead)
   */
  boolean retry(long deadLetterId);

  /**
   * {@link #retry(long) Retries} every retryable dead letter of this group, oldest first, each in its own
   * transaction. Failures are logged and leave their dead letter as it was.
   *
   * @return how many handlers ran and committed
   */
  int retryAll();

  /** The dead letters of this group, newest first, at most {@code limit}. */
  List<DeadLetter> deadLetters(int limit);

  /** What the group holds now; see the transport's own status type. */
  GroupStatus status();

  /**
   * Runs the outbox rows of {@code range} (of this consumer's topic) through this consumer's own path (inbox
   * marker, handler, commit) without touching Redis (the group, the streams or the lists). The outbox keeps every
   * published row for the outbox retention, whatever Redis was trimmed to, so this replays old messages that Redis
   * no longer holds.
   *
   * <ul>
   *   <li>A message that has an inbox marker (processed or dead-lettered) is a duplicate and changes nothing; one
   *       that has none is handled exactly as a delivery would be, once, even while this consumer (or another of
   *       its group) is running: the marker decides.
   *   <li>Rows are read and settled a page ({@code batchSize} rows) per transaction, in outbox id order, so memory
   *       stays bounded whatever the range's size. After each page the listener's
   *       {@link ConsumerListener#replayProgress replayProgress} gets the totals so far.
   *   <li>A failing handler is reported in the result, with its message ID, and the replay goes on; nothing is
   *       dead-lettered by a replay and nothing of the failed message commits.
   *   <li>Rows the relay has not published yet are left to it and counted as {@code unpublished}. Rows the outbox
   *       retention already deleted cannot be replayed: the result counts them ({@code purged}, from the purge
   *       log), so a purged range never passes for "nothing to do".
   * </ul>
   *
   * <p>A bound on time or key does not narrow the walk: the outbox has no index for them, so the replay reads the
   * topic's rows in id order and filters. Use an id range to bound the work.
   *
   * @throws ConsumerException if the database fails; what committed before stays committed, and running the
   *     replay again is safe
   */
  ReplayResult replayFromOutbox(OutboxRange range);

  /**
   * Which of {@code messageIds} this group has processed: those with an inbox marker of outcome {@code processed}
   * (a dead-lettered message is not among them).
   */
  Set<UUID> processed(Collection<UUID> messageIds);

  /**
   * Deletes the markers processed before {@code processedBefore}, or refuses; see
   * {@link StreamConsumer#purgeInbox(Instant)}.
   */
  long purgeInbox(Instant processedBefore);

  /**
   * Purges the markers past the dedup window ({@link InboxRetention#dedupWindow()}), as the automatic purge of a
   * started consumer does every {@link InboxRetention#purgeInterval()}: in batches of 10,000, each marker checked
   * against the same rule as {@link #purgeInbox(Instant)} (whose transport names what Redis still retains); markers
   * the rule keeps stay, with one WARN that names the rule and the counts, and the rest go.
   */
  InboxPurgeResult purgeInbox();

  /**
   * This consumer's health, for a probe; cheap (no database or Redis call: it reads what the workers track) and
   * thread-safe.
   *
   * <ul>
   *   <li>{@code DOWN}: {@code not-started} (not started, or only polled), {@code closed}, every worker's thread
   *       dead ({@code worker-dead} for each), or {@code shards-mismatch} (Redis holds a key for the shard past the
   *       ones the consumer declares: a relay declares more shards, and their entries are never read; looked at on
   *       start and every 10 s).
   *   <li>{@code DEGRADED}: a worker paused by its environment ({@code database-unreachable} for a database
   *       failure, a revoked grant or a missing table too; {@code redis-unreachable}; {@code infrastructure-pause}
   *       for a handler's {@link RetryLaterException}; {@code not-the-producers-database} when ghosts are refused
   *       but this database never held a row of the topic), a worker whose thread died ({@code worker-dead}; it gets a
   *       new thread within {@code leaseRenewInterval}, a list consumer's {@code heartbeatInterval}, with one ERROR
   *       line), or one on such a new thread that has not yet completed a step ({@code worker-replaced}).
   *   <li>{@code UP} otherwise.
   * </ul>
   */
  Health health();

  /** The immutable settings this consumer runs with. */
  ConsumerConfig config();

  /** Closes with a deadline of 30 s; see {@link #close(Duration)}. */
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
