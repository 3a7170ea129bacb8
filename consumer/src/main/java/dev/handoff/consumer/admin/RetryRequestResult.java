package dev.handoff.consumer.admin;

/**
 * What {@link DeadLetterAdmin#requestRetry} did.
 *
 * @param requested dead letters now requested for retry (one already requested counts once and keeps its first
 *     request time); the running consumers of each group run them at their next housekeeping turn
 * @param notRetryable dead letters the selection matched that cannot be retried (the entry could not be decoded or
 *     was lost, so the message is not stored); left as they are
 */
public record RetryRequestResult(long requested, long notRetryable) {}
