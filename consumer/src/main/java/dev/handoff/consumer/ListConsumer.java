package dev.handoff.consumer;

import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.RedisConnectionSpec;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * Consumes one topic (all its shards) from Redis lists used as a reliable queue (the relay's
 * {@link dev.handoff.core.Transport#LIST list transport}), with the same effectively-once effects, handler
 * interfaces, inbox and dead-letter tables as {@link StreamConsumer}.
 *
 * <pre>{@code
 * ListConsumer consumer = ListConsumer.builder(dataSource, RedisConnectionSpec.of("redis://redis:6379"))
 *     .topic("payments")
 *     .group("ledger")
 *     .handler((tx, message) -> ledger.charge(tx, message))
 *     .build();
 * consumer.start();
 * }</pre>
 *
 * <p>How it works, per worker and shard: {@code BLMOVE} (never {@code BLPOP}, which would lose the element on a
 * crash) moves elements from the left of the shard's list into the worker's own processing list, atomically; then
 * one database transaction inserts the inbox markers and runs the handlers of the new messages; commit; then
 * {@code LREM processing 1 <element>} acknowledges each element, exactly one occurrence per acknowledgement.
 * Blocking moves run on connections of their own, whose socket timeout is longer than the block timeout.
 *
 * <p>Redis recovers nothing by itself, so handoff does, explicitly: each consumer keeps a heartbeat key with a TTL
 * ({@code heartbeatTtl}) beside each of its processing lists and registers the lists in the shard's registry. A
 * reaper (every consumer runs one, every {@code reapInterval}) moves the elements of a consumer whose heartbeat
 * expired back to the head of the list, in their order, atomically, counting one delivery per element. A worker
 * that restarts under the same name first handles what its processing list still holds.
 *
 * <p>Guarantees:
 * <ul>
 *   <li>At-least-once delivery to the handler, at-most-once commit of its effects per group: a late worker that
 *       finishes after its element was returned (it was presumed dead) meets the inbox marker of whichever commit
 *       came first, so the effect is applied once; its LREM then finds nothing.
 *   <li>A failing handler does not undo its batch; its element stays in the worker's processing list and is retried
 *       after a backoff (exponential, jittered); after {@code maxDeliveries} deliveries (failures and returns by the
 *       reaper together) it goes to {@code dead_letter} with an inbox marker of outcome {@code dead}, and is
 *       removed. Elements that cannot be decoded go there at once.
 *   <li>Per shard, elements are taken in list order, which is the relay's assignment order (commit visibility, not
 *       outbox id order); with one worker, handlers run in that
 *       order. Several workers or consumers complete out of order, and a returned element is retried after newer
 *       ones were taken.
 *   <li>In-flight work is bounded by {@code workers x batchSize}; the relay's capacity bounds the list and the
 *       processing lists together, and the outbox holds the rest (see {@link #status()} for all three numbers).
 * </ul>
 *
 * <p>Unlike streams, a list element goes to one consumer: every consumer of a topic's lists must use the same
 * {@code group} (the scope of the inbox), and fan-out to several groups needs the stream transport. Its
 * {@link #config()} holds the heartbeat TTL and interval and the reaper interval in
 * {@link ConsumerConfig.ListSettings}; the stream transport's settings ({@code minIdle}, {@code startPosition},
 * {@code statusScanLimit} and the rest of {@link ConsumerConfig.StreamSettings}) do not apply.
 *
 * <p>Implementations are thread-safe. {@link #pollOnce()} is the deterministic alternative to {@link #start()} for
 * tests; do not mix them.
 */
public interface ListConsumer extends HandoffConsumer {

  /**
   * Starts a builder for a consumer that uses {@code dataSource} and the Redis server (or cluster), login, TLS
   * settings and timeouts of {@code redis}. handoff speaks RESP2 and sets the blocking reads' socket timeout itself
   * ({@code block} plus a margin).
   */
  static ListConsumerBuilder builder(DataSource dataSource, RedisConnectionSpec redis) {
    return new ListConsumerBuilder(dataSource, redis);
  }

  /**
   * Publishes the heartbeats, starts the worker threads and the housekeeping thread (heartbeats, reaper).
   *
   * @throws IllegalStateException if the consumer was started, polled or closed before
   */
  void start();

  /**
   * One unit of work on the calling thread, without blocking: heartbeats, one reaper pass, then a batch (own
   * processing list first after a restart, then retries that are due, then new elements), settled in one
   * transaction and acknowledged.
   *
   * @throws IllegalStateException if the consumer was started or closed
   */
  PollResult pollOnce();

  /**
   * Deletes this group's inbox markers processed before {@code processedBefore}, refusing if any belongs to a
   * message that can still come back: one the lists or processing lists hold (at or above the lowest ID they hold),
   * or one the outbox holds; see {@link StreamConsumer#purgeInbox(Instant)}.
   *
   * @throws InboxPurgeRefusedException if so; nothing is deleted
   */
  long purgeInbox(Instant processedBefore);

  /** Waiting, in processing per consumer, the oldest in processing, the outbox backlog, dead letters. */
  @Override
  ListStatus status();

  /** Closes with a 30 s deadline; see {@link #close(Duration)}. Idempotent. */
  @Override
  void close();

  /**
   * Stops taking elements, lets batches in flight finish until {@code deadline}, then abandons the rest (rolled
   * back); whatever is left in this consumer's processing lists (abandoned, or waiting for a retry) is moved back to
   * the head of the lists at once, and the heartbeats and registrations are removed. Idempotent.
   *
   * @return whether every worker finished in time
   */
  boolean close(Duration deadline);
}
