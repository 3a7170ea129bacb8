package dev.handoff.relay.internal;

import java.time.Duration;

/**
 * How long the relay's loop waits between cycles when the last one found no rows: 2 ms at first, doubling up to the
 * idle poll interval while quiet, or up to {@value #HEARING_POLL_FACTOR} times that while the relay sleeps (every
 * append to its shards notifies it, and no owned shard has rows waiting for room). After a cycle that found rows the
 * loop does not ask: it starts the next cycle at once. A notification cuts any wait short.
 * Confined to the relay's thread.
 */
final class CyclePacing {

  /**
   * The first wait after the relay's last busy cycle, and the wait while it holds batches to mark: nothing announces
   * new rows while the relay is awake, so it looks again this soon: as soon as the raw loop it is measured against,
   * whose empty poll waits 2 ms. At 5 ms, a row that came just after an empty cycle waited for it, which added about
   * 7 ms to the p99 of a row's wait for its stream ID at 2,000 rows/s (docs/performance.md, "The first wait after an
   * empty cycle"). A busy cycle itself is followed by the next one at once: a pause there made every row wait for it
   * (docs/performance.md, "No pause after a busy cycle").
   */
  static final long FIRST_WAIT_MILLIS = 2;

  /**
   * While the relay sleeps, every append wakes it, and the idle poll is a safety net (rows written by something
   * other than handoff, a LISTEN connection that died without a word): looking 10 times less often takes an idle
   * relay's database cost below 2 transactions a second whatever it owns, and such a row waits at most 10 idle
   * poll intervals.
   */
  static final int HEARING_POLL_FACTOR = 10;

  /**
   * How long a relay that hears notifications polls after its last rows before it sleeps (asks appends to notify
   * it): the waits 2, 4, 8 and 16 ms, 30 ms in all, lie behind it. Shorter, and a steady trickle of rows would make
   * most appends notify; longer, and a relay that just emptied its shards polls for nothing.
   */
  static final long SLEEP_AFTER_MILLIS = 32;

  private final long idlePollMillis;
  private long idleMillis;

  CyclePacing(Duration idlePollInterval) {
    this.idlePollMillis = idlePollInterval.toMillis();
  }

  /** The last cycle may have left work behind: the next one starts at once, and the next wait is short again. */
  void busy() {
    idleMillis = 0;
  }

  /**
   * The wait before the next cycle. {@code holdsMarks}: batches wait for the next cycle's transaction to mark them,
   * which comes after the shortest wait; {@code notified}: the relay sleeps, so that every append to its shards
   * notifies it, and no owned shard has rows it could not take (a full list frees room without a notification).
   */
  long nextWaitMillis(boolean holdsMarks, boolean notified) {
    long cap = notified ? idlePollMillis * HEARING_POLL_FACTOR : idlePollMillis;
    if (holdsMarks) {
      idleMillis = 0;
      return Math.min(FIRST_WAIT_MILLIS, idlePollMillis);
    }
    idleMillis = idleMillis == 0 ? FIRST_WAIT_MILLIS : Math.min(cap, idleMillis * 2);
    return idleMillis;
  }
}
