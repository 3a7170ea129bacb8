package dev.handoff.consumer;

import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;

/**
 * Consumes one topic (all its shards) as one Redis consumer group, with effectively-once effects: each message's
 * handler effects commit at most once per group, together with the message's inbox marker.
 *
 * <pre>{@code
 * StreamConsumer consumer = StreamConsumer.builder(dataSource, RedisConnectionSpec.of("redis://redis:6379"))
 *     .topic("payments")
 *     .group("ledger")
 *     .handler((tx, message) -> ledger.charge(tx, message))
 *     .build();
 * consumer.start();
 * }</pre>
 *
 * <p>How it works, per worker: read up to {@code batchSize} entries, then in <b>one</b> database transaction
 * insert an inbox marker {@code (group, message ID)} per message ({@code ON CONFLICT DO NOTHING}); run the handler
 * for each message whose marker was inserted (a conflict means it was done before: a duplicate, skipped); commit;
 * then acknowledge every committed entry with one {@code XACK}. The acknowledgement is an optimisation: the marker's
 * primary key is what makes redeliveries, replays, reclaims and zombie consumers harmless.
 *
 * <p>Guarantees:
 * <ul>
 *   <li>At-least-once delivery to the handler, at-most-once commit of its effects per group (so: effectively once
 *       for effects written on the handler's transaction).
 *   <li>A failing handler does not undo its batch (see {@link FailureIsolation}); its entry stays pending, backs
 *       off (exponential, jittered) and is retried; after {@code maxDeliveries} it goes to {@code dead_letter},
 *       together with a marker of outcome {@code dead}, and is acknowledged. An entry that cannot be decoded goes
 *       there at once.
 *   <li>The group is created when missing, from the beginning unless {@link StartPosition} says otherwise; if it
 *       vanishes (Redis restarted without persistence) it is recreated from the beginning, with backoff.
 *   <li>On start each worker first replays its own pending entries, then reads new ones. Abandoned entries of any
 *       consumer are claimed after {@code minIdle} ({@code XAUTOCLAIM}, following the cursor). Entries being
 *       handled have their lease renewed, so a slow handler is not mistaken for a dead one.
 *   <li>Pending entries whose payload was trimmed away are recorded as lost (a {@code dead_letter} row with an
 *       error starting {@code lost:}) and acknowledged.
 *   <li>In-flight work is bounded by {@code workers x batchSize}; a slow handler slows reading, nothing queues.
 * </ul>
 *
 * <p>Implementations are thread-safe. A consumer is started once; {@link #pollOnce()} is the deterministic
 * alternative for tests and must not be mixed with {@link #start()}.
 */
public interface StreamConsumer extends HandoffConsumer {

  /**
   * Starts a builder for a consumer that uses {@code dataSource} and the Redis server (or cluster), login, TLS
   * settings and timeouts of {@code redis}. handoff speaks RESP2 and sets the blocking reads' socket timeout itself
   * ({@code block} plus a margin).
   */
  static StreamConsumerBuilder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new StreamConsumerBuilder(dataSource, redis);
  }

  /**
   * Creates the group on every shard if needed and starts the worker threads.
   *
   * @throws IllegalStateException if the consumer was started, polled or closed before
   */
  void start();

  /**
   * Does one unit of work on the calling thread, without blocking for new entries: ensures the groups exist, then
   * replays a page of this consumer's own pending entries if any are left, else claims abandoned entries (one
   * {@code XAUTOCLAIM} step per shard, continuing the cursor of the previous call) and reads new entries; handles
   * what it got in one batch transaction and acknowledges it. For tests and tools.
   *
   * @throws IllegalStateException if the consumer was started or closed
   */
  PollResult pollOnce();

  /** A snapshot of the group on every shard (backlog, pending, consumers, dead letters). */
  @Override
  ConsumerStatus status();

  /**
   * Deletes this group's inbox markers processed before {@code processedBefore}, refusing if any of them belongs to
   * a message that can still come back.
   *
   * <p>The rule: a marker may only go once its message can never come back. Messages come back while a stream
   * retains them (redelivery, {@link #replayRetained() replay}), and while the outbox holds them (a
   * {@link #replayFromOutbox replay from the outbox}, or the relay publishing them again after Redis lost data).
   * handoff checks both: a marker is retained by Redis when its stream ID is at or above the oldest entry of the
   * topic's streams (a missing stream, which Redis may have lost, refuses the purge outright), and by the outbox
   * when the outbox still has a row with its message ID.
   *
   * @return the number of markers deleted
   * @throws InboxPurgeRefusedException if a marker older than {@code processedBefore} belongs to a message still
   *     retained in a stream or in the outbox; nothing is deleted
   */
  long purgeInbox(Instant processedBefore);

  /**
   * Runs every entry the topic's streams retain through this consumer's own path (marker, handler, commit) without
   * touching the group: entries already processed are counted as duplicates and change nothing; entries not
   * processed yet are handled (exactly as a delivery would). Safe at any time, even while the consumer runs: the
   * inbox marker decides. Entries that fail or cannot be decoded are reported in the result and left alone.
   */
  PollResult replayRetained();

  /** Runs the given messages through this consumer's own path, as {@link #replayRetained()} does. */
  PollResult replay(List<InboundMessage> messages);

  /**
   * Stops reading and waits up to the default deadline (30 s) for batches in flight to finish; see
   * {@link #close(Duration)}. Idempotent.
   */
  @Override
  void close();

  /**
   * Stops reading, lets batches in flight finish until {@code deadline}, then abandons what is left: interrupted
   * batches are rolled back and their entries stay pending (un-acknowledged) for another consumer to claim after
   * {@code minIdle}. Then closes the Redis connections. Idempotent; later calls return at once.
   *
   * @return whether every worker finished in time
   */
  boolean close(Duration deadline);
}
