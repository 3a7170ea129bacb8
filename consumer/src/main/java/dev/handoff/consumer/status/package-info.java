/**
 * What a consumer reports about its group: {@link dev.handoff.consumer.status.ConsumerStatus} (streams) and
 * {@link dev.handoff.consumer.status.ListStatus} (lists), both a {@link dev.handoff.consumer.status.GroupStatus};
 * the workers paused on the environment ({@link dev.handoff.consumer.status.PausedWorker}); and the group's
 * {@link dev.handoff.consumer.status.DeadLetter}s. Immutable values, safe to share between threads.
 */
package dev.handoff.consumer.status;
