package dev.handoff.consumer.ordering;

/**
 * What an ordered group does with a message that failed {@code maxDeliveries} times, while every later message of
 * its shard waits behind it.
 */
public enum WhenExhausted {

  /**
   * Dead-letter it and go on with the shard's next message: the default. The dead letter is recorded in the same
   * transaction as the successors that follow it, so it takes the message's place in the order; {@code handoff dlq
   * retry} runs it again later through the shard's owner, after whatever the shard committed by then.
   */
  DEAD_LETTER_AND_CONTINUE,

  /**
   * Stop the shard until an operator acts ({@code handoff ordered resume}, with {@code --skip} to dead-letter the
   * message instead of trying it again). Nothing of the shard is applied meanwhile; the consumer's status, health
   * ({@code DEGRADED}, {@code shard-stopped}) and metrics show the shard, since when, and the message.
   */
  STOP_SHARD
}
