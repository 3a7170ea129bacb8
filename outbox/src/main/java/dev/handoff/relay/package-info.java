/**
 * The relay: {@link dev.handoff.relay.Relay} publishes committed outbox rows to Redis streams (or lists), exactly
 * once per row into the stream and in order per shard, under a fenced lease per shard, and keeps the outbox and the
 * streams bounded; {@link dev.handoff.relay.StreamRepair} repairs a stream by hand. It ships in the
 * {@code handoff-outbox} artifact beside the producer's API, in a package of its own.
 */
package dev.handoff.relay;
