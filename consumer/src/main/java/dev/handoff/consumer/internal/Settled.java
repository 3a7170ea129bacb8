package dev.handoff.consumer.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * The outcome of settling one batch: every delivery lands in exactly one list. What committed
 * ({@link #committed()}) may be acknowledged; what failed waits for its retry; what was abandoned decided nothing.
 *
 * <p>Not thread-safe: one worker fills it and reads it.
 */
final class Settled {

  /** A delivery whose handler threw, with what it threw; it is delivered again after its backoff. */
  record Failure(Delivery delivery, Throwable error) {}

  /** A delivery dead-lettered in the batch's transaction, with the error stored beside it. */
  record Dead(Delivery delivery, String error) {}

  final List<Delivery> handled = new ArrayList<>();
  final List<Delivery> duplicates = new ArrayList<>();
  final List<Dead> dead = new ArrayList<>();
  final List<Delivery> lost = new ArrayList<>();
  final List<Failure> failed = new ArrayList<>();
  /** Left unacknowledged without a verdict because the environment failed or close abandoned the batch. */
  final List<Delivery> abandoned = new ArrayList<>();
  /**
   * Ordered groups: what came after a failed message in the batch, not tried, waiting behind it (or the second half
   * of a batch split to find a failure). Unacknowledged, no delivery counted against it.
   */
  final List<Delivery> deferred = new ArrayList<>();
  /** Ordered groups: the batch's fence found that another consumer took the shard; nothing committed. */
  boolean fencedOut;
  /** Ordered groups: the failed message ran out of deliveries and its shard stops ({@code STOP_SHARD}). */
  boolean stoppedHead;
  /** The environment's failure that abandoned the batch (see {@link Blame#ENVIRONMENT}), or null. */
  Throwable databaseError;
  int transactions;
  /** Transactions run again at once after a serialization failure or deadlock. */
  int conflictsRetried;

  int committed() {
    return handled.size() + duplicates.size() + dead.size() + lost.size();
  }

  /** Everything whose verdict committed, in one list: what the transport acknowledges. */
  List<Delivery> toAcknowledge() {
    List<Delivery> out = new ArrayList<>(committed());
    out.addAll(handled);
    out.addAll(duplicates);
    dead.forEach(x -> out.add(x.delivery()));
    out.addAll(lost);
    return out;
  }
}
