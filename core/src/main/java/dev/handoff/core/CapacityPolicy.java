package dev.handoff.core;

import java.time.Duration;
import java.util.Objects;

/**
 * What an append does when its topic already holds {@code maxUnpublished} rows that the relay has not published:
 * the backpressure that keeps producers from outrunning the relay and consumers without bound.
 *
 * <p>The depth is a cached figure (refreshed at most every {@code OutboxBuilder.depthRefreshInterval},
 * and raised locally by each append), so the bound is approximate by at most one refresh interval of appends
 * from each process. "Appended" means committed to the outbox; it does not mean published or processed.
 */
public sealed interface CapacityPolicy {

  /** The most unpublished rows a topic holds under {@link #standard()}. */
  long STANDARD_MAX_UNPUBLISHED = 1_000_000;

  /** How long an append waits under {@link #standard()} before it throws {@code OutboxFullException}. */
  Duration STANDARD_DEADLINE = Duration.ofSeconds(1);

  /**
   * The default of every topic: {@code waitUpTo(1_000_000, 1 s)}. An unbounded outbox would hide an overload (a
   * relay down, a Redis full) behind a table that grows for as long as it lasts; this bound is far above any backlog
   * a healthy deployment builds, and when it is reached producers slow down for a second and then hear of it.
   * Choose your own bound, or {@link #unlimited()}, per topic with {@link TopicConfig#withCapacity}.
   */
  static CapacityPolicy standard() {
    return new Wait(STANDARD_MAX_UNPUBLISHED, STANDARD_DEADLINE);
  }

  /** No bound: the outbox absorbs any backlog, and an overload shows only as a growing depth. */
  static CapacityPolicy unlimited() {
    return Unlimited.INSTANCE;
  }

  /** Refuse at once with {@code OutboxFullException} when the topic holds {@code maxUnpublished} rows. */
  static CapacityPolicy reject(long maxUnpublished) {
    return new Reject(maxUnpublished);
  }

  /**
   * Wait, inside the caller's transaction, until the depth falls below {@code maxUnpublished}; throw
   * {@code OutboxFullException} if it has not by {@code deadline}. The transaction stays open (and keeps its locks)
   * while it waits.
   */
  static CapacityPolicy waitUpTo(long maxUnpublished, Duration deadline) {
    return new Wait(maxUnpublished, deadline);
  }

  /** See {@link #unlimited()}. */
  enum Unlimited implements CapacityPolicy {
    INSTANCE
  }

  /** See {@link #reject(long)}. */
  record Reject(long maxUnpublished) implements CapacityPolicy {
    public Reject {
      if (maxUnpublished < 1) {
        throw new IllegalArgumentException("maxUnpublished must be at least 1, was " + maxUnpublished);
      }
    }
  }

  /** See {@link #waitUpTo(long, Duration)}. */
  record Wait(long maxUnpublished, Duration deadline) implements CapacityPolicy {
    public Wait {
      if (maxUnpublished < 1) {
        throw new IllegalArgumentException("maxUnpublished must be at least 1, was " + maxUnpublished);
      }
      Objects.requireNonNull(deadline, "deadline");
      if (deadline.isNegative() || deadline.isZero()) {
        throw new IllegalArgumentException("deadline must be positive, was " + deadline);
      }
    }
  }
}
