/**
 * What every part of handoff shares: a topic's declaration ({@link dev.handoff.core.TopicConfig}), the wire formats
 * of stream entries and list elements ({@link dev.handoff.core.StreamFormat}, {@link dev.handoff.core.ListFormat}),
 * how to reach Redis ({@link dev.handoff.core.RedisConnectionSpec}), health, and the exception root
 * ({@link dev.handoff.core.HandoffException}).
 *
 * <p>The {@code handoff-core} artifact comes with the outbox, the relay and the consumers; nobody depends on it alone.
 * Its Redis client (Jedis) is optional here, so that a service that only appends loads no Redis classes.
 */
package dev.handoff.core;
