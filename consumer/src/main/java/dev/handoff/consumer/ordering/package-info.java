/**
 * Ordered processing per shard for stream consumer groups: {@link dev.handoff.consumer.ordering.Ordering} and what
 * becomes of a message that keeps failing ({@link dev.handoff.consumer.ordering.WhenExhausted}). Immutable values.
 */
package dev.handoff.consumer.ordering;
