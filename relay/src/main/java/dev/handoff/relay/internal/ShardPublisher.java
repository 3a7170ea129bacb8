package dev.handoff.relay.internal;

import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayCycle;
import dev.handoff.relay.RelayFaults;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.internal.RedisTransport.EntryStatus;
import dev.handoff.relay.internal.RedisTransport.PublishResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The relay's publishing job: per owned shard, what is already assigned (a pending batch after a crash or a takeover,
 * rows re-published after Redis lost data), then a new batch for the shards that have rows (asked of the outbox once
 * per cycle for all of them, {@link PendingWork}), written with its IDs and marked published, fenced by
 * the lease epoch. Used under the relay's work lock only; not thread-safe on its own.
 */
final class ShardPublisher {

  private final RelayConfig config;
  private final RelayListener listener;
  private final RedisTransport streams;
  private final OutboxQueries outbox;
  private final CycleTransaction transaction;
  private final StreamLoss loss;
  private final BatchMarks marks;
  private final RelayFaults faults;
  private final RelayMaintenance maintenance;
  private final ShardTable table;
  private final ConnectionSource connections;
  private final Consumer<Runnable> notifier;
  private final RedisMemory memory;
  private final RewindPauses pauses;
  /** Set by each cycle of {@link #publishOwned}: whether the next cycle should start without waiting. */
  private boolean mayHaveMore;

  ShardPublisher(RelayConfig config, RelayCollaborators collaborators, RedisTransport streams, LeaseQueries leases,
      OutboxQueries outbox, RelayMaintenance maintenance, ShardTable table, ConnectionSource connections,
      Consumer<Runnable> notifier, RedisMemory memory, DatabaseRewinds rewinds) {
    this.config = config;
    this.listener = collaborators.listener();
    this.streams = streams;
    this.outbox = outbox;
    this.loss = new StreamLoss(config.owner(), streams, outbox);
    this.marks = table.marks();
    this.transaction = new CycleTransaction(config, streams, marks, collaborators.faults(), table);
    this.faults = collaborators.faults();
    this.maintenance = maintenance;
    this.table = table;
    this.connections = connections;
    this.notifier = notifier;
    this.memory = memory;
    this.pauses = new RewindPauses(config, leases, rewinds);
  }

  /** Whether the last cycle left work that may be waiting (a full batch, a re-send, a loss). */
  boolean mayHaveMore() {
    return mayHaveMore;
  }

  /** Brings the next cycle on at once (a maintenance run still in progress). */
  void moreToDo() {
    mayHaveMore = true;
  }

  /**
   * One cycle over the owned shards, in one transaction: what is already assigned first (a pending batch after a
   * crash or a takeover, rows re-published after Redis lost data); then, in shard order, the mark of each batch the
   * previous cycle wrote and held ({@link BatchMarks}) and a new batch for every shard that has rows, with the
   * commit in one round trip ({@link CycleTransaction}); then the new batches written to Redis, pipelined in one
   * round trip where the transport can ({@link RedisTransport#publishAll}), else shard after shard. With
   * {@code holdMarks} the new batches wait, unmarked, for the next cycle's transaction; otherwise they are marked at
   * once in a second one. Until its mark, a written batch stays the
   * lease's pending batch: after a failure or a crash it is sent again with its IDs and found. A shard whose node
   * fails waits so ({@link ShardFailures}) while the others go on; the cycle then marks what the others wrote and
   * throws that failure. Sets {@link #mayHaveMore()}.
   */
  RelayCycle publishOwned(boolean holdMarks) throws SQLException {
    int published = 0;
    long republished = 0;
    mayHaveMore = false;
    if (table.isEmpty()) {
      table.forgetHeld();
      return new RelayCycle(0, 0, 0, 0);
    }
    int assigned = 0;
    ShardFailures failures = new ShardFailures(table);
    try (Connection c = connections.get()) {
      pauses.sync(c, table);
      for (OwnedShard o : table.shards()) {
        if (table.mustResend(o) && !o.paused) {
          PublishOutcome p = failures.attempt(o, () -> publishAssigned(c, o));
          if (p != null) {
            published += p.published;
            republished += p.republished;
            mayHaveMore |= p.published + p.republished > 0;
          }
        }
      }
      List<BatchMarks.Written> toMark = table.takeHeld();
      CycleTransaction.Cycle cycle;
      try {
        cycle = Transactions.inOne(c, () -> transaction.markAndAssign(c, toMark,
            transaction.wanted(c, failures, toMark.size())));
      } catch (SQLException | RuntimeException | Error e) {
        toMark.forEach(w -> table.resend(w.shard()));
        throw e;
      }
      published += marks.applyAll(cycle.recorded());
      pauses.applyRequested(c, table); // a rewind the marks just found stops its shard before its batch goes out
      List<Assigned> batches = batchesOf(cycle);
      List<RedisTransport.Publish> writes = new ArrayList<>(batches.size());
      batches.removeIf(a -> {
        if (a.shard().paused) {
          table.resend(a.shard()); // the shard's pending batch: sent, with its IDs, once it resumes
        }
        return a.shard().paused;
      });
      for (Assigned a : batches) {
        assigned += a.rows().size();
        faults.beforeStreamWrite(a.shard().id, a.rows().size());
        writes.add(new RedisTransport.Publish(a.shard().streamKey, a.shard().relayKey, a.shard().confirmedAdded,
            a.rows()));
      }
      List<PublishResult> pipelined = streams.publishAll(writes);
      List<BatchMarks.Written> written = new ArrayList<>();
      for (int i = 0; i < batches.size(); i++) {
        OwnedShard o = batches.get(i).shard();
        List<OutboxRow> rows = batches.get(i).rows();
        PublishResult result = pipelined.get(i) != null ? pipelined.get(i)
            : failures.attempt(o, () -> streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, rows));
        if (result == null) {
          continue; // still the shard's pending batch: sent again with its IDs
        }
        if (result.lost()) {
          republished += streamLost(c, o, result.entriesAdded());
          mayHaveMore = true;
          continue;
        }
        faults.afterStreamWrite(o.id, rows.size());
        written.add(new BatchMarks.Written(o, rows, result));
      }
      if (holdMarks && failures.count() == 0) {
        table.hold(written);
      } else {
        published += marks.markAll(c, written);
      }
    }
    if (failures.outOfMemory()) {
      // Redis refuses writes until something is freed, and deletions still run: free what every group finished
      // now, whatever the maintenance schedule, or a full Redis never drains by itself.
      maintenance.trimWhenFull(table.shards(), memory);
    } else {
      maintenance.trimAfterPublish(table.shards().stream().filter(o -> !failures.failed(o)).toList());
    }
    failures.rethrow();
    return new RelayCycle(table.size(), assigned, published, republished);
  }

  /** Whether the last cycle found rows it could not take: a shard without room, or one whose node failed. */
  boolean rowsLeftWaiting() {
    return transaction.rowsLeftWaiting();
  }

  /** A new batch, committed as its shard's pending batch. */
  private record Assigned(OwnedShard shard, List<OutboxRow> rows) {}

  /** The batches a cycle's transaction assigned, once it committed; a shard whose lease went is given up. */
  private List<Assigned> batchesOf(CycleTransaction.Cycle cycle) {
    List<Assigned> out = new ArrayList<>();
    for (int i = 0; i < cycle.wanted().size(); i++) {
      CycleTransaction.Wanted want = cycle.wanted().get(i);
      OwnedShard o = want.shard();
      OutboxQueries.Batch batch = cycle.batches().get(i);
      if (!batch.exists()) {
        lost(o, "its lease expired or was taken over before it could assign");
        continue;
      }
      // A full batch may have left rows behind; a short one took all there were when it ran, and rows committed
      // since then notify (or are found by the next idle poll): no second pass over every shard just to see.
      mayHaveMore |= batch.rows().size() >= want.limit();
      o.adaptBatchSize(batch.rows().size(), config.publishing().minBatchSize(), config.publishing().maxBatchSize());
      if (!batch.rows().isEmpty()) {
        out.add(new Assigned(o, batch.rows()));
      }
    }
    return out;
  }

  private record PublishOutcome(int published, long republished) {}

  /**
   * Sends what is assigned to the shard until nothing is left, until two calls in a row send nothing (the target is
   * full: what is left waits, with its IDs, for room), or until the deadline. Returns whether nothing is left.
   */
  boolean sendAssigned(Connection c, OwnedShard o, long deadlineNanos) throws SQLException {
    table.flush(c);
    if (pauses.requested(o.id)) {
      pauses.applyRequested(c, table); // recorded before the lease goes, so that the next owner stays stopped too
    }
    if (o.paused) {
      return false; // stopped after a database rewind: what is assigned waits, with its IDs, for the resume
    }
    table.resend(o);
    int idle = 0;
    while (table.mustResend(o) && table.holds(o.id) && System.nanoTime() < deadlineNanos && idle < 2) {
      PublishOutcome p = publishAssigned(c, o);
      idle = p.published() + p.republished() > 0 ? 0 : idle + 1;
    }
    return !table.mustResend(o);
  }

  /**
   * Sends a page of rows that keep their stream IDs after Redis lost data, else the pending batch recorded in the
   * lease (after a crash or a takeover); tells the table the shard has nothing assigned left when there is neither.
   */
  private PublishOutcome publishAssigned(Connection c, OwnedShard o) throws SQLException {
    // Re-published rows first: their IDs are below any pending batch's, and Redis only accepts rising IDs.
    List<OutboxRow> rows = outbox.assigned(c, o.id, config.publishing().maxBatchSize());
    if (!rows.isEmpty()) {
      return send(c, o, rows, false);
    }
    OutboxQueries.Batch pending = outbox.pendingBatch(c, o.id);
    if (pending.exists()) {
      return send(c, o, pending.rows(), true);
    }
    table.resent(o);
    return new PublishOutcome(0, 0);
  }

  /**
   * Writes rows with their stream IDs to Redis and records the outcome. A pending batch ({@code endsBatch}) goes in
   * one call, as it was sized to, and recording it clears the batch; other rows go in calls of at most
   * {@code maxBatchBytes}.
   */
  private PublishOutcome send(Connection c, OwnedShard o, List<OutboxRow> rows, boolean endsBatch) throws SQLException {
    if (rows.isEmpty()) {
      if (endsBatch) {
        // Every row of the batch was published by someone else already: only forget the batch.
        if (outbox.markPublished(c, o.id, config.owner(), o.epoch, List.of(), o.confirmedAdded, true).marked() < 0) {
          lost(o, "its lease was taken over");
        }
      }
      return new PublishOutcome(0, 0);
    }
    int published = 0;
    long republished = 0;
    int from = 0;
    while (from < rows.size() && table.holds(o.id) && !pauses.requested(o.id)) {
      int to = from;
      long bytes = 0;
      while (to < rows.size()
          && (endsBatch || to == from
              || bytes + rows.get(to).payload().length <= config.publishing().maxBatchBytes())) {
        bytes += rows.get(to).payload().length;
        to++;
      }
      List<OutboxRow> chunk = rows.subList(from, to);
      from = to;
      faults.beforeStreamWrite(o.id, chunk.size());
      PublishResult result = streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, chunk);
      if (result.lost()) {
        republished += streamLost(c, o, result.entriesAdded());
        break;
      }
      faults.afterStreamWrite(o.id, chunk.size());
      published += marks.apply(marks.recordNow(c, new BatchMarks.Written(o, chunk, result), endsBatch));
      if (result.statuses().contains(EntryStatus.NOT_SENT)) {
        break; // the target is full: what follows must wait, in order, for the next attempt
      }
    }
    return new PublishOutcome(published, republished);
  }

  private long streamLost(Connection c, OwnedShard o, long redisCount) throws SQLException {
    long republished = loss.requeue(c, o, redisCount);
    o.confirmedAdded = 0;
    table.resend(o);
    notify(() -> listener.streamLost(o.id, republished));
    return republished;
  }

  /** Checks an owned stream for data loss even when nothing is being published. */
  void probe(Connection c, OwnedShard o) throws SQLException {
    if (o.confirmedAdded == 0) {
      return;
    }
    PublishResult result = streams.publish(o.streamKey, o.relayKey, o.confirmedAdded, List.of());
    if (result.lost()) {
      streamLost(c, o, result.entriesAdded());
    }
  }

  private void lost(OwnedShard o, String why) {
    table.lose(o, why);
  }

  private void notify(Runnable callback) {
    notifier.accept(callback);
  }
}
