/**
 * The producer side of handoff: {@link dev.handoff.outbox.Outbox} appends {@link dev.handoff.outbox.Message}s in
 * the caller's transaction.
 *
 * <p>Delivery semantics: a message is appended if and only if the caller's transaction commits. "Appended" means
 * committed to the outbox table; it does not mean published to Redis or processed by a consumer.
 */
package dev.handoff.outbox;
