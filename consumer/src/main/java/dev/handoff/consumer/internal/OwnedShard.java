package dev.handoff.consumer.internal;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A shard of an ordered group that this consumer holds the lease of, and what its owner keeps between batches.
 * One worker works on it at a time, under {@link #lock}; the {@link ShardOwnership} takes the same lock to give it
 * back, so a shard is never released in the middle of a batch. The fields other than {@link #lock} and
 * {@link #released} are confined to the worker holding the lock.
 */
final class OwnedShard {

  final int shard;
  final String streamKey;
  final long epoch;
  final ReentrantLock lock = new ReentrantLock();
  /** Set once the lease is given back or lost: a worker that takes the lock after that leaves the shard alone. */
  volatile boolean released;

  /**
   * The entries read and not yet committed, in stream order, head first: the head failed (or the environment
   * stopped the batch) and its successors wait behind it. Empty while the shard flows.
   */
  List<Delivery> held = List.of();
  /** When the head of {@link #held} may be tried again, in {@code System.nanoTime()} terms. */
  long retryAtNanos;
  /** Whether the head of {@link #held} failed in its handler (its next try is a new delivery, counted in Redis). */
  boolean headFailed;
  /** Whether the former owners' pending entries are still to be read (from {@link #pendingCursor} on). */
  boolean pendingToRead = true;
  String pendingCursor = "0-0";
  /** Stopped for an operator: its head ran out of deliveries under {@code WhenExhausted.STOP_SHARD}. */
  boolean stopped;
  /** What holds the shard up now, for health and metrics from any thread; null while it flows. */
  volatile Blocked blocked;

  /** The message a shard waits on: its entry, since when, its deliveries, and whether the shard stopped for it. */
  record Blocked(String streamId, Instant since, long deliveries, boolean stopped) {}

  /** When a stopped shard next looks for the operator's answer, in {@code System.nanoTime()} terms. */
  long nextResumeCheckNanos;

  OwnedShard(int shard, String streamKey, long epoch, boolean stopped) {
    this.shard = shard;
    this.streamKey = streamKey;
    this.epoch = epoch;
    this.stopped = stopped;
  }

  /** Whether it has nothing to do until new entries arrive: nothing held, nothing pending to read, not stopped. */
  boolean idle() {
    return held.isEmpty() && !pendingToRead && !stopped;
  }
}
