package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerTransactions;

/**
 * How a consumer settles its batches, as its builder set it.
 *
 * @param transactions the application's transactions, or null: the consumer runs its own
 * @param refuseGhosts whether a message this database has no trace of is dead-lettered as a ghost, not applied
 */
public record SettleOptions(ConsumerTransactions transactions, boolean refuseGhosts) {}
