/**
 * The consuming side of handoff: {@link dev.handoff.consumer.StreamConsumer} reads a topic's Redis streams as a
 * consumer group and runs a handler per message in a database transaction that also records the message in the
 * inbox, so that effects commit at most once per group however often a message is delivered.
 */
package dev.handoff.consumer;
