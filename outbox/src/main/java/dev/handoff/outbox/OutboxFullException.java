package dev.handoff.outbox;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.HandoffException;

/**
 * An append was refused because the topic's unpublished rows reached the capacity set by its
 * {@link CapacityPolicy}. Nothing was written by the refused append; the caller's transaction is still open and is
 * the caller's to roll back or to retry later.
 */
public final class OutboxFullException extends HandoffException {

  private static final long serialVersionUID = 1L;

  private final String topic;
  private final long depth;
  private final long capacity;

  public OutboxFullException(String topic, long depth, long capacity, String detail) {
    super("outbox topic '" + topic + "' is full: " + depth + " unpublished rows, capacity " + capacity
        + (detail.isEmpty() ? "" : "; " + detail));
    this.topic = topic;
    this.depth = depth;
    this.capacity = capacity;
  }

  public String topic() {
    return topic;
  }

  /** The number of unpublished rows seen when the append was refused. */
  public long depth() {
    return depth;
  }

  public long capacity() {
    return capacity;
  }
}
