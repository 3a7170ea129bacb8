package dev.handoff.outbox;

import java.util.UUID;

/**
 * What an append wrote: the outbox row and the identifiers handoff gave the message. The row becomes visible to
 * the relay when the caller's transaction commits, and never if it rolls back.
 *
 * @param outboxId the row's id in the outbox table
 * @param messageId the UUIDv7 that identifies the message end to end (the consumer's idempotency key)
 * @param topic the message's topic
 * @param shard the shard (stream) of the topic the message goes to
 */
public record AppendedMessage(long outboxId, UUID messageId, String topic, int shard) {}
