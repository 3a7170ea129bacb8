package dev.handoff.consumer.status;

import java.time.Instant;
import java.util.UUID;

/**
 * One shard of a group ordered per shard ({@code Ordering.perShard()}), as its lease row in the database says.
 *
 * @param shard the shard
 * @param owner the consumer that holds its lease now, or {@code null} when it is free or its lease expired
 * @param epoch the lease's fencing epoch: raised at every takeover, checked by every batch's commit
 * @param position the last stream entry the shard's owners committed, in order, or {@code null} before the first
 * @param positionAt when that commit happened, or {@code null}
 * @param blocked the message that holds the shard up, or {@code null} while it flows
 */
public record OrderedShard(int shard, String owner, long epoch, String position, Instant positionAt,
    Blocked blocked) {

  /**
   * A message that failed, with every later message of its shard waiting behind it.
   *
   * @param streamId its stream entry
   * @param messageId its message ID, or {@code null} when its payload could not be read
   * @param since when it first failed
   * @param deliveries how often it was delivered so far
   * @param error what its last failure threw, stack trace included
   * @param stoppedAt when the shard stopped for an operator ({@code WhenExhausted.STOP_SHARD}), or {@code null}
   *     while it is retried with backoff
   * @param resumeRequested what an operator asked of a stopped shard and its owner has not done yet ({@code retry} or
   *     {@code skip}), or {@code null}
   */
  public record Blocked(String streamId, UUID messageId, Instant since, int deliveries, String error,
      Instant stoppedAt, String resumeRequested) {}
}
