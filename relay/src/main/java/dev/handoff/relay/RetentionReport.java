package dev.handoff.relay;

import dev.handoff.core.ShardId;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * What one maintenance run of a {@link Relay} did: the streams it trimmed (and why each keeps what it keeps), and
 * the outbox rows it purged. A run trims every owned stream in bounded steps until it holds nothing that every
 * group finished (to the stream's node granularity), then purges published rows past the outbox retention in
 * bounded batches until none is left, all within the relay's retention budget; {@link #caughtUp()} says whether
 * it got there.
 *
 * @param finishedAt when the run ended (the relay's clock)
 * @param took how long the run took, across the slices it ran in between publishing
 * @param caughtUp whether every stream was trimmed and every row past retention purged within the budget
 * @param streams one entry per stream the relay owned when the run started and still owned while trimming it
 * @param purged published rows deleted by this run
 * @param rowsPastRetention published rows past the retention still in the outbox after the run (purge lag): 0 when
 *     the purge caught up; otherwise counted among the next 100,000 rows from where the purge stopped
 *     ({@code rowsPastRetentionExact} false when there were more rows than that to look at)
 * @param rowsPastRetentionExact whether {@code rowsPastRetention} is exact rather than a lower bound
 * @param oldestPastRetention how long ago the oldest of those rows was published, or {@link Duration#ZERO}
 * @param repairs the streams on which the run looked for entries still needed and gone (only where an XDEL above
 *     the trim point happened since the last look; empty otherwise, and then no outbox row was read for it), and
 *     what it reset and acknowledged (see {@link StreamRepair})
 */
public record RetentionReport(Instant finishedAt, Duration took, boolean caughtUp, List<StreamRetention> streams,
    long purged, long rowsPastRetention, boolean rowsPastRetentionExact, Duration oldestPastRetention,
    List<RepairReport.ShardRepair> repairs) {

  public RetentionReport {
    streams = List.copyOf(streams);
    repairs = List.copyOf(repairs);
  }

  /**
   * One stream after its trim.
   *
   * @param shard the stream's shard
   * @param length the entries the stream holds after the trim
   * @param minId every group had finished every entry below this ID ("" when the stream does not exist)
   * @param holdingGroup the group whose unfinished entries set {@code minId}: the one holding the history back
   *     ("" when the stream has no group, when the trim point is the retention cut; {@code (trim margin)} when the
   *     relay's trim margin set it)
   * @param trimmed entries evicted by this run
   * @param caughtUp whether the trim reached {@code minId} (to node granularity) within the budget
   */
  public record StreamRetention(ShardId shard, long length, String minId, String holdingGroup, long trimmed,
      boolean caughtUp) {}
}
