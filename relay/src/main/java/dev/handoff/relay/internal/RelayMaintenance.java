package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.RepairReport;
import dev.handoff.relay.RetentionReport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The relay's retention work: trimming streams to what every group finished, storing that point as the shard's
 * watermark, and purging published rows past the outbox retention.
 *
 * <p>A maintenance run starts every {@code maintenanceInterval}, whatever the load: a relay that is never idle
 * must still trim and purge, or Redis and the outbox grow for as long as traffic lasts. A run is done in slices of
 * at most {@link #SLICE_NANOS} between publish cycles, so publishing never waits long for it, and each step is
 * bounded (one {@code XTRIM ... LIMIT} call, one purge batch). It repeats steps until it caught up or its budget
 * ({@code retentionBudget}) is spent. Between runs, a stream that gained {@code trimSlack} entries since its last
 * trim is trimmed again right after publishing, so a stream's length tracks its groups' progress instead of the
 * maintenance interval; that trim stores no watermark (it would cost a commit per trim), the next run does.
 *
 * <p>Not thread-safe: the relay calls it under its work lock.
 */
final class RelayMaintenance {

  private static final Logger log = LoggerFactory.getLogger(RelayMaintenance.class);

  /** The longest a slice of maintenance holds the relay's work between publish cycles. */
  static final long SLICE_NANOS = 50_000_000L;
  /** The longest the trims right after a publish cycle may take together. */
  private static final long PUBLISH_TRIM_NANOS = 20_000_000L;
  /** Rows looked at, at most, for the purge lag of a run that ran out of budget. */
  private static final int LAG_COUNT_LIMIT = 100_000;

  private final RelayConfig config;
  private final Clock clock;
  private final RedisTransport transport;
  private final LeaseQueries leases;
  private final OutboxQueries outbox;
  private final String[] topicNames;
  private final Consumer<Runnable> notify;
  private final RelayListener listener;
  private final DeletionWatch deletions;
  private long nextRunNanos;
  private Run run;
  private volatile RetentionReport last;

  RelayMaintenance(RelayConfig config, RelayCollaborators collaborators, RedisTransport transport,
      LeaseQueries leases, OutboxQueries outbox, String[] topicNames, Consumer<Runnable> notify,
      DeletionWatch deletions) {
    this.config = config;
    this.clock = collaborators.clock();
    this.transport = transport;
    this.leases = leases;
    this.outbox = outbox;
    this.topicNames = topicNames;
    this.notify = notify;
    this.listener = collaborators.listener();
    this.deletions = deletions;
    this.nextRunNanos = System.nanoTime();
  }

  /** One run in progress: the streams left to trim, then the purge. */
  private final class Run {
    final long startNanos = System.nanoTime();
    final long deadlineNanos = startNanos + config.retention().budget().toNanos();
    final Deque<OwnedShard> toTrim;
    /** Streams to look at for deleted entries, after the trims (which set their trim points). */
    final Deque<OwnedShard> toCheck;
    final List<RetentionReport.StreamRetention> trimmed = new ArrayList<>();
    final List<RepairReport.ShardRepair> repairs = new ArrayList<>();
    long evictedOfCurrent;
    long purged;
    int purgeSteps;
    /** Where the purge's walk along the primary key goes on; -1 before it found its first row. */
    long purgeFrom = -1;
    boolean purgeDone;
    boolean caughtUp = true;

    Run(Collection<OwnedShard> owned) {
      this.toTrim = config.trimming().enabled() ? new ArrayDeque<>(owned) : new ArrayDeque<>();
      this.toCheck = deletions != null ? new ArrayDeque<>(owned) : new ArrayDeque<>();
    }
  }

  /** Makes a run due now (the next slice starts one, unless one is in progress). */
  void startNow() {
    nextRunNanos = System.nanoTime();
  }

  /** Whether a run is in progress or due. */
  boolean due() {
    return run != null || System.nanoTime() >= nextRunNanos;
  }

  /** The report of the last run that ended, or null. */
  RetentionReport last() {
    return last;
  }

  /**
   * Does up to {@code sliceNanos} of the current run, starting one if due. It reads the shards settled (the held
   * marks flushed first), so that what it trims and checks is what the database records as published.
   *
   * @return the run's report when this slice finished it, else null
   */
  RetentionReport slice(Connection c, ShardTable owned, long sliceNanos) throws SQLException {
    if (run == null) {
      if (System.nanoTime() < nextRunNanos) {
        return null;
      }
      run = new Run(owned.settled(c));
    } else {
      owned.flush(c);
    }
    Run r = run;
    long sliceEnd = Math.min(System.nanoTime() + sliceNanos, r.deadlineNanos);
    while (!r.toTrim.isEmpty()) {
      OwnedShard o = r.toTrim.peek();
      if (!owned.holds(o.id)) {
        r.toTrim.poll();
        r.evictedOfCurrent = 0;
        continue;
      }
      RedisTransport.TrimResult t =
          transport.trim(o.streamKey, o.relayKey, noGroupFloor(), keepFrom(), config.trimming().limit());
      r.evictedOfCurrent += t.evicted();
      if (!t.minId().isEmpty()) {
        o.trimPoint = StreamId.parse(t.minId());
      }
      boolean shardDone = t.minId().isEmpty() || t.evicted() < config.trimming().limit();
      boolean outOfTime = System.nanoTime() >= r.deadlineNanos;
      if (shardDone || outOfTime) {
        if (!t.minId().isEmpty() && t.groups() > 0) {
          leases.raiseWatermark(c, o.id, config.owner(), o.epoch, StreamId.parse(t.minId()));
        }
        o.sinceTrim = 0;
        r.trimmed.add(new RetentionReport.StreamRetention(o.id, t.length(), t.minId(), t.holder(),
            r.evictedOfCurrent, shardDone));
        r.caughtUp &= shardDone;
        reportTrim(o.id, t.minId(), r.evictedOfCurrent);
        r.toTrim.poll();
        r.evictedOfCurrent = 0;
      }
      if (outOfTime) {
        r.toTrim.clear();
        break;
      }
      if (System.nanoTime() >= sliceEnd) {
        return null;
      }
    }
    if (checkDeletions(c, owned, r, sliceEnd)) {
      return null;
    }
    while (!r.purgeDone) {
      // Past the budget the run stops, after at least one step so that a tiny budget still makes progress.
      if (System.nanoTime() >= r.deadlineNanos && r.purgeSteps > 0) {
        r.caughtUp = false;
        break;
      }
      r.purgeSteps++;
      purgeStep(c, r);
      if (!r.purgeDone && System.nanoTime() >= sliceEnd && System.nanoTime() < r.deadlineNanos) {
        return null;
      }
    }
    return finish(c, r);
  }

  /**
   * One bounded purge statement: walks the primary key from the oldest row of the relay's topics, one id range of
   * {@code retentionBatchSize} at a time, deleting what was published before the retention cut. The walk ends at the
   * first range that holds rows but nothing to delete and nothing appended before the cut (the young rows start
   * there), or at the end of the table. A row that stays (unpublished, or published late) is looked at again by the
   * next run, which starts from the oldest row again: keeping a row longer than the retention is safe, deleting one
   * early would not be.
   */
  private void purgeStep(Connection c, Run r) throws SQLException {
    if (r.purgeFrom < 0) {
      r.purgeFrom = outbox.firstIdFrom(c, topicNames, Long.MIN_VALUE);
      if (r.purgeFrom < 0) {
        r.purgeDone = true;
        return;
      }
    }
    long to = r.purgeFrom + config.retention().batchSize();
    OutboxQueries.PurgedRange range =
        outbox.purgeRange(c, config.retention().outboxRetention(), topicNames, r.purgeFrom, to);
    r.purged += range.deleted();
    if (range.rows() == 0) {
      r.purgeFrom = outbox.firstIdFrom(c, topicNames, to); // a gap: jump to the next row
      r.purgeDone = r.purgeFrom < 0;
    } else if (range.deleted() == 0 && range.appendedBeforeCut() == 0) {
      r.purgeDone = true;
    } else {
      r.purgeFrom = to;
    }
  }

  private RetentionReport finish(Connection c, Run r) throws SQLException {
    long[] lag = {0, 0, 0};
    if (!r.purgeDone) {
      lag = outbox.purgeLag(c, config.retention().outboxRetention(), topicNames, r.purgeFrom, LAG_COUNT_LIMIT);
    }
    long took = System.nanoTime() - r.startNanos;
    RetentionReport report = new RetentionReport(clock.instant(), Duration.ofNanos(took),
        r.caughtUp && r.purgeDone, r.trimmed, r.purged, lag[0], lag[2] < LAG_COUNT_LIMIT,
        Duration.ofMillis(lag[1]), r.repairs);
    run = null;
    // On schedule from the run's start; a run that took longer than the interval is followed by the next at once.
    nextRunNanos = r.startNanos + config.retention().maintenanceInterval().toNanos();
    last = report;
    if (r.purged > 0) {
      long rows = r.purged;
      log.debug("relay {} purged {} published rows older than {}", config.owner(), rows,
          config.retention().outboxRetention());
      notify.accept(() -> listener.purged(rows));
    }
    if (!report.caughtUp()) {
      log.warn("relay {}: retention fell behind: the run stopped at its budget of {} with {}{} published rows past"
              + " the retention of {} (oldest published {} ago) and {} stream(s) not trimmed to what their groups"
              + " finished; raise retentionBudget or retentionBatchSize, or lower the load",
          config.owner(), config.retention().budget(), report.rowsPastRetention(),
          report.rowsPastRetentionExact() ? "" : "+", config.retention().outboxRetention(),
          report.oldestPastRetention(), report.streams().stream().filter(s -> !s.caughtUp()).count());
    }
    notify.accept(() -> listener.maintained(report));
    return report;
  }

  /** Looks at the owned streams for deleted entries ({@link DeletionWatch}); true when the slice ran out first. */
  private boolean checkDeletions(Connection c, ShardTable owned, Run r, long sliceEnd)
      throws SQLException {
    while (!r.toCheck.isEmpty()) {
      OwnedShard o = r.toCheck.poll();
      if (owned.holds(o.id)) {
        RepairReport.ShardRepair repair = deletions.check(c, o, noGroupFloor());
        if (repair != null) {
          r.repairs.add(repair);
          if (repair.foundAnything()) {
            owned.resend(o); // rows reset to go out again with new IDs
          }
        }
      }
      if (!r.toCheck.isEmpty() && System.nanoTime() >= sliceEnd) {
        return true;
      }
    }
    return false;
  }

  /**
   * Right after publishing: trims the streams that gained {@code trimSlack} entries since their last trim, in
   * bounded calls, for at most a few milliseconds in all. Lists are not trimmed (their consumers remove what they
   * finish), so this does nothing for them.
   */
  void trimAfterPublish(Collection<OwnedShard> shards) {
    if (config.transport() != Transport.STREAM || !config.trimming().enabled()) {
      return;
    }
    long end = System.nanoTime() + PUBLISH_TRIM_NANOS;
    for (OwnedShard o : shards) {
      if (o.sinceTrim < config.trimming().slack()) {
        continue;
      }
      o.sinceTrim = 0;
      long evicted = 0;
      RedisTransport.TrimResult t;
      do {
        t = transport.trim(o.streamKey, o.relayKey, noGroupFloor(), keepFrom(), config.trimming().limit());
        evicted += t.evicted();
      } while (t.evicted() >= config.trimming().limit() && System.nanoTime() < end);
      reportTrim(o.id, t.minId(), evicted);
      if (System.nanoTime() >= end) {
        return;
      }
    }
  }

  /**
   * When Redis refused a write because it is full: trims every owned stream to what its groups finished, however
   * little it gained since its last trim, in bounded calls for at most one maintenance slice, and records the
   * episode's figures in {@code memory}. The trim script only reads and deletes, which Redis still runs when full.
   */
  void trimWhenFull(Collection<OwnedShard> shards, RedisMemory memory) {
    long end = System.nanoTime() + SLICE_NANOS;
    long length = 0;
    long evictedAll = 0;
    boolean streams = config.transport() == Transport.STREAM && config.trimming().enabled();
    for (OwnedShard o : shards) {
      if (!streams) {
        break;
      }
      long evicted = 0;
      RedisTransport.TrimResult t;
      try {
        // Until a call frees nothing: an approximate trim evicts whole nodes, often fewer than its limit, and what is
        // left may still be finished. Into the trim margin too: a full Redis must free what is finished, or it never
        // drains by itself.
        do {
          t = transport.trim(o.streamKey, o.relayKey, noGroupFloor(), null, config.trimming().limit());
          evicted += t.evicted();
        } while (t.evicted() > 0 && System.nanoTime() < end);
      } catch (JedisException e) {
        // The cycle fails with Redis being full, which is what it reports; the next cycle trims again.
        log.debug("relay {}: trimming {} while Redis is full failed: {}", config.owner(), o.id, e.toString());
        break;
      }
      o.sinceTrim = 0;
      if (!t.minId().isEmpty()) {
        o.trimPoint = StreamId.parse(t.minId());
      }
      length += t.length();
      evictedAll += evicted;
      reportTrim(o.id, t.minId(), evicted);
      if (System.nanoTime() >= end) {
        break;
      }
    }
    long[] figures = transport.memory();
    memory.seen(figures[0], figures[1], streams ? length : -1, evictedAll);
  }

  private void reportTrim(ShardId shard, String minId, long evicted) {
    if (evicted > 0) {
      log.debug("relay {} trimmed {} below {}: {} entries", config.owner(), shard, minId, evicted);
      notify.accept(() -> listener.trimmed(shard, minId, evicted));
    }
  }

  /**
   * The trim margin's point: entries of the last {@code trimMargin} stay, finished or not, so that after a database
   * failover the entries of the lost commits are still there to report and to rewind to. Null without a margin.
   */
  private StreamId keepFrom() {
    long margin = config.trimming().margin().toMillis();
    return margin == 0 ? null : new StreamId(Math.max(0, clock.millis() - margin), 0);
  }

  /** With no group, a stream keeps what the outbox retention keeps. */
  private StreamId noGroupFloor() {
    return new StreamId(Math.max(0, clock.millis() - config.retention().outboxRetention().toMillis()), 0);
  }
}
