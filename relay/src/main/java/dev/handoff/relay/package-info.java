/**
 * The relay: {@link dev.handoff.relay.Relay} publishes committed outbox rows to Redis streams (or lists), exactly
 * once per row into the stream and in order per shard, under a fenced lease per shard, and keeps the outbox and the
 * streams bounded; {@link dev.handoff.relay.StreamRepair} repairs a stream by hand. It ships in the
 * {@code handoff-relay} artifact: a service that only appends depends on {@code handoff-outbox} and loads none of it.
 */
package dev.handoff.relay;
