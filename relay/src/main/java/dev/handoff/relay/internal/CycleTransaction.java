package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayFaults;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * The database side of a busy relay cycle: which owned shards have rows, then one transaction that marks the
 * batches the previous cycle wrote and assigns the next ones. Used by {@link ShardPublisher} under the relay's work
 * lock; not thread-safe.
 */
final class CycleTransaction {

  private final RelayConfig config;
  private final RedisTransport streams;
  private final PendingWork pendingWork;
  private final BatchAssignment assignment;
  private final BatchMarks marks;
  private final RelayFaults faults;
  private final ShardTable table;
  /** Set by {@link #wanted}: a shard had rows and no room for them, or its node failed. */
  private boolean rowsLeftWaiting;

  CycleTransaction(RelayConfig config, RedisTransport streams, BatchMarks marks,
      RelayFaults faults, ShardTable table) {
    this.config = config;
    this.streams = streams;
    this.pendingWork = new PendingWork(config.schema());
    this.assignment = new BatchAssignment(config.schema());
    this.marks = marks;
    this.faults = faults;
    this.table = table;
  }

  /** A shard that has rows, and how many it may take now. */
  record Wanted(OwnedShard shard, int limit) {}

  /** What a cycle's transaction did: the marks it wrote, and the batches it asked for with what it got. */
  record Cycle(List<BatchMarks.Recorded> recorded, List<Wanted> wanted, List<OutboxQueries.Batch> batches) {}

  /**
   * The shards to ask for a batch, each with how many rows it may take now; none of a shard whose pending batch is
   * still to be sent. A cycle that marks the batches of at least half the shards it may ask ({@code marking} of
   * them) commits a write anyway, so it asks all of them, where the target is unbounded: a shard with no rows then
   * costs its lease row's lock in that transaction, no more locks than the marks take, and the cycle saves the round
   * trip of the check, one of its two to the database. Otherwise only the shards that have rows (one read-only
   * statement for all of them) are asked: an idle relay's wake-up must not cost a durable commit, nor a trickle into
   * one shard of many a lock on every lease row.
   */
  List<Wanted> wanted(Connection c, ShardFailures failures, int marking) throws SQLException {
    rowsLeftWaiting = false;
    long askable = table.shards().stream().filter(o -> !table.mustResend(o) && !o.paused).count();
    boolean askAll = marking > 0 && 2L * marking >= askable && !streams.bounded();
    Set<ShardId> withWork = askAll ? null : pendingWork.shardsWithWork(c, table.ids());
    List<Wanted> wanted = new ArrayList<>();
    for (OwnedShard o : table.shards()) {
      if (table.mustResend(o) || o.paused) {
        continue;
      }
      if (withWork != null && !withWork.contains(o.id)) {
        o.adaptBatchSize(0, config.publishing().minBatchSize(), config.publishing().maxBatchSize());
        continue;
      }
      // A bounded target (a list at capacity) takes no more than it has room for; the outbox holds the rest.
      Long room = failures.attempt(o, () -> streams.room(o.streamKey, o.relayKey));
      if (room != null && room > 0) {
        wanted.add(new Wanted(o, (int) Math.min(o.batchSize, room)));
      } else {
        rowsLeftWaiting = true;
      }
    }
    return wanted;
  }

  /** Whether the last {@link #wanted} left rows behind that no notification will announce again. */
  boolean rowsLeftWaiting() {
    return rowsLeftWaiting;
  }

  /**
   * The cycle's transaction: the marks of the shards' held batches in one statement, then the assignment of every
   * asked shard's next one in another ({@link BatchAssignment}), each from its lowest unassigned row (a row that
   * commits late with a lower id must go before anything its key commits later). Marking first is what lets the
   * assignment run: a shard has at most one pending batch. Every lease row is locked in shard order, as every
   * statement that locks several of them does, so that two such transactions never deadlock: where an asked shard
   * that is not marked comes before a marked one, a first statement locks them all in order. It runs in the caller's
   * transaction, after {@link #wanted}, and commits it: all of it and the {@code COMMIT} go as one {@link RoundTrip},
   * so a busy cycle is one transaction in two round trips (the check with its {@code BEGIN}, then this). A held batch
   * of which Redis refused rows (something else writes the stream) needs its mark's outcome before it can re-queue
   * them: that cycle sends a mark per shard, one statement at a time.
   */
  Cycle markAndAssign(Connection c, List<BatchMarks.Written> toMark, List<Wanted> wanted) throws SQLException {
    TreeMap<ShardId, BatchMarks.Written> marking = new TreeMap<>();
    toMark.forEach(w -> marking.put(w.shard().id, w));
    TreeMap<ShardId, Wanted> asked = new TreeMap<>();
    wanted.forEach(w -> asked.put(w.shard().id, w));
    RoundTrip trip = toMark.stream().anyMatch(BatchMarks::needsMarkOutcome) ? RoundTrip.atOnce(c) : new RoundTrip();
    if (!marking.isEmpty() && asked.keySet().stream()
        .anyMatch(s -> !marking.containsKey(s) && s.compareTo(marking.lastKey()) < 0)) {
      TreeSet<ShardId> all = new TreeSet<>(marking.keySet());
      all.addAll(asked.keySet());
      trip.add(assignment.lockPart(List.copyOf(all), config.owner()));
    }
    Supplier<List<BatchMarks.Recorded>> recorded = marks.recordEach(c, trip, List.copyOf(marking.values()));
    RoundTrip.Result<List<OutboxQueries.Batch>> batches = null;
    if (!asked.isEmpty()) {
      List<BatchAssignment.Request> requests = new ArrayList<>(asked.size());
      for (Wanted want : asked.values()) {
        requests.add(new BatchAssignment.Request(want.shard().id, want.shard().epoch, want.limit()));
      }
      batches = trip.add(assignment.part(requests, config.owner(), config.publishing().maxBatchBytes()));
    }
    faults.beforeCycleCommit(marking.size(), asked.size());
    trip.runAndCommit(c);
    return new Cycle(recorded.get(), List.copyOf(asked.values()),
        batches == null ? List.of() : batches.get());
  }
}
