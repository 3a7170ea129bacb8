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
  private final OutboxQueries outbox;
  private final PendingWork pendingWork;
  private final BatchMarks marks;
  private final RelayFaults faults;
  private final ShardTable table;
  /** Set by {@link #wanted}: a shard had rows and no room for them, or its node failed. */
  private boolean rowsLeftWaiting;

  CycleTransaction(RelayConfig config, RedisTransport streams, OutboxQueries outbox, BatchMarks marks,
      RelayFaults faults, ShardTable table) {
    this.config = config;
    this.streams = streams;
    this.outbox = outbox;
    this.pendingWork = new PendingWork(config.schema());
    this.marks = marks;
    this.faults = faults;
    this.table = table;
  }

  /** A shard that has rows, and how many it may take now. */
  record Wanted(OwnedShard shard, int limit) {}

  /** What a cycle's transaction did: the marks it wrote, and the batches it asked for with what it got. */
  record Cycle(List<BatchMarks.Recorded> recorded, List<Wanted> wanted, List<OutboxQueries.Batch> batches) {}

  /**
   * The shards that have rows (one read-only statement for all of them), each with how many it may take now; none
   * of a shard whose pending batch is still to be sent.
   */
  List<Wanted> wanted(Connection c, ShardFailures failures) throws SQLException {
    rowsLeftWaiting = false;
    Set<ShardId> withWork = pendingWork.shardsWithWork(c, table.ids());
    List<Wanted> wanted = new ArrayList<>();
    for (OwnedShard o : table.shards()) {
      if (table.mustResend(o) || o.paused) {
        continue;
      }
      if (!withWork.contains(o.id)) {
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
   * The cycle's transaction: shard by shard in shard order, the mark of the shard's held batch and the assignment of
   * its next one, always from its lowest unassigned row (a row that commits late with a lower id must go before
   * anything its key commits later). Marking first is what lets the assignment run: a shard has at most one pending
   * batch. Every lease row is locked in shard order, as every statement that locks several of them does, so that
   * two such transactions never deadlock. It runs in the caller's transaction, after {@link #wanted}, and commits it:
   * all of it and the {@code COMMIT} go as one {@link RoundTrip}, so a busy cycle is one transaction in two round
   * trips (the check with its {@code BEGIN}, then this). A held batch of which Redis refused rows (something else
   * writes the stream) needs its mark's outcome before it can re-queue them: that cycle sends the same statements one
   * at a time.
   */
  Cycle markAndAssign(Connection c, List<BatchMarks.Written> toMark, List<Wanted> wanted) throws SQLException {
    TreeMap<ShardId, BatchMarks.Written> marking = new TreeMap<>();
    toMark.forEach(w -> marking.put(w.shard().id, w));
    TreeMap<ShardId, Wanted> asked = new TreeMap<>();
    wanted.forEach(w -> asked.put(w.shard().id, w));
    TreeSet<ShardId> order = new TreeSet<>(marking.keySet());
    order.addAll(asked.keySet());
    RoundTrip trip = toMark.stream().anyMatch(BatchMarks::needsMarkOutcome) ? RoundTrip.atOnce(c) : new RoundTrip();
    List<Supplier<BatchMarks.Recorded>> recorded = new ArrayList<>(marking.size());
    List<RoundTrip.Result<OutboxQueries.Batch>> batches = new ArrayList<>(asked.size());
    for (ShardId shard : order) {
      BatchMarks.Written w = marking.get(shard);
      if (w != null) {
        recorded.add(marks.record(c, trip, w, true));
      }
      Wanted want = asked.get(shard);
      if (want != null) {
        OwnedShard o = want.shard();
        batches.add(trip.add(outbox.assignPart(o.id, config.owner(), o.epoch, want.limit(),
            config.publishing().maxBatchBytes())));
      }
    }
    faults.beforeCycleCommit(recorded.size(), batches.size());
    trip.runAndCommit(c);
    return new Cycle(recorded.stream().map(Supplier::get).toList(), List.copyOf(asked.values()),
        batches.stream().map(RoundTrip.Result::get).toList());
  }
}
