package dev.handoff.consumer;

/**
 * Where a consumer group starts when handoff creates it. It matters only at creation: an existing group keeps
 * its position, and a group that vanished (Redis restarted without persistence) is always recreated from the
 * {@link #BEGINNING}, whatever this says, because recreating it at the end would silently skip messages.
 */
public enum StartPosition {

  /** {@code XGROUP CREATE ... 0}: the group sees every entry the stream holds. The default, and the only safe
   * choice for outbox streams, since the relay may publish before the consumer first starts. */
  BEGINNING,

  /** {@code XGROUP CREATE ... $}: the group sees only entries added after it was created. Entries already in the
   * stream are never delivered to it. Use only on purpose. */
  NEW_ENTRIES_ONLY
}
