package dev.handoff.outbox.internal;

import dev.handoff.outbox.RelayConfig;
import dev.handoff.outbox.RelayCycle;
import dev.handoff.outbox.RelayListener;
import dev.handoff.outbox.ShardId;
import dev.handoff.outbox.internal.RedisTransport.EntryStatus;
import dev.handoff.outbox.internal.RedisTransport.PublishResult;
import dev.handoff.outbox.testkit.RelayFaults;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The relay's publishing job: per owned shard, what is already assigned (a pending batch after a crash or a takeover,
 * rows re-published after Redis lost data), then a new batch for the shards that have rows (asked of the outbox once
 * per cycle for all of them, {@link PendingWork}), written with its IDs and marked published, fenced by
 * the lease epoch. Used under the relay's work lock only; not thread-safe on its own.
 */
final class ShardPublisher {

  /** Opens an auto-commit connection. */
  @FunctionalInterface
  interface Connections {
    Connection get() throws SQLException;
  }

  private final RelayConfig config;
  private final RelayListener listener;
  private final RedisTransport streams;
  private final OutboxQueries outbox;
  private final PendingWork pendingWork;
  private final StreamLoss loss;
  private final BatchMarks marks;
  private final RelayFaults faults;
  private final RelayMaintenance maintenance;
  private final Map<ShardId, OwnedShard> owned;
  private final Connections connections;
  private final BiConsumer<OwnedShard, String> lostHandler;
  private final Consumer<Runnable> notifier;
  /** Set by each cycle of {@link #publishOwned}: whether the next cycle should start without waiting. */
  private boolean mayHaveMore;

  ShardPublisher(RelayConfig config, RedisTransport streams, LeaseQueries leases, OutboxQueries outbox,
      RelayFaults faults, RelayMaintenance maintenance, Map<ShardId, OwnedShard> owned, Connections connections,
      BiConsumer<OwnedShard, String> lostHandler, Consumer<Runnable> notifier) {
    this.config = config;
    this.listener = config.listener();
    this.streams = streams;
    this.outbox = outbox;
    this.pendingWork = new PendingWork(config.schema());
    this.loss = new StreamLoss(config.owner(), streams, outbox);
    this.marks = new BatchMarks(config, streams, leases, outbox, lostHandler, notifier);
    this.faults = faults;
    this.maintenance = maintenance;
    this.owned = owned;
    this.connections = connections;
    this.lostHandler = lostHandler;
    this.notifier = notifier;
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
   * previous cycle wrote and held ({@link BatchMarks}) and a new batch for every shard that has rows; then the new
   * batches written to Redis shard after shard. With {@code holdMarks} the new batches wait, unmarked, for the next
   * cycle's transaction; otherwise they are marked at once in a second one. Until its mark, a written batch stays the
   * lease's pending batch: after a failure or a crash it is sent again with its IDs and found. A shard whose node
   * fails waits so ({@link ShardFailures}) while the others go on; the cycle then marks what the others wrote and
   * throws that failure. Sets {@link #mayHaveMore()}.
   */
  RelayCycle publishOwned(boolean holdMarks) throws SQLException {
    int published = 0;
    long republished = 0;
    mayHaveMore = false;
    if (owned.isEmpty()) {
      marks.forget();
      return new RelayCycle(0, 0, 0, 0);
    }
    int assigned = 0;
    ShardFailures failures = new ShardFailures();
    try (Connection c = connections.get()) {
      for (OwnedShard o : new ArrayList<>(owned.values())) {
        if (o.checkAssigned) {
          PublishOutcome p = failures.attempt(o, () -> publishAssigned(c, o));
          if (p != null) {
            published += p.published;
            republished += p.republished;
            mayHaveMore |= p.published + p.republished > 0;
          }
        }
      }
      List<BatchMarks.Written> toMark = marks.takeHeld();
      Cycle cycle;
      try {
        cycle = markAndAssign(c, toMark, wanted(c, failures));
      } catch (SQLException | RuntimeException | Error e) {
        toMark.forEach(w -> w.shard().checkAssigned = true);
        throw e;
      }
      published += marks.applyAll(cycle.recorded());
      List<BatchMarks.Written> written = new ArrayList<>();
      for (Assigned a : batchesOf(cycle)) {
        OwnedShard o = a.shard();
        List<OutboxRow> rows = a.rows();
        assigned += rows.size();
        faults.beforeStreamWrite(o.id, rows.size());
        PublishResult result = failures.attempt(o, () -> streams.publish(o.streamKey, o.relayKey, o.confirmedAdded,
            rows));
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
        marks.hold(written);
      } else {
        published += marks.markAll(c, written);
      }
    }
    maintenance.trimAfterPublish(owned.values().stream().filter(o -> !failures.failed(o)).toList());
    failures.rethrow();
    return new RelayCycle(owned.size(), assigned, published, republished);
  }

  /** Whether batches the last cycle wrote wait for the next cycle's transaction to mark them. */
  boolean holdsMarks() {
    return marks.holding();
  }

  /**
   * Marks the held batches now, in one transaction: before anything else looks at a shard's pending batch or its
   * published rows (a loss check, a re-send, a release, maintenance).
   */
  int flushMarks(Connection c) throws SQLException {
    return marks.flush(c);
  }

  /** Forgets the held batches after a failure; each is sent again (and found) from its lease's pending batch. */
  void forgetHeldMarks() {
    marks.forget();
  }

  /** A shard that has rows, and how many it may take now. */
  private record Wanted(OwnedShard shard, int limit) {}

  /** A new batch, committed as its shard's pending batch. */
  private record Assigned(OwnedShard shard, List<OutboxRow> rows) {}

  /** What a cycle's transaction did: the marks it wrote, and the batches it asked for with what it got. */
  private record Cycle(List<BatchMarks.Recorded> recorded, List<Wanted> wanted, List<OutboxQueries.Batch> batches) {}

  /**
   * The shards that have rows (one read-only statement for all of them), each with how many it may take now; none
   * of a shard whose pending batch is still to be sent.
   */
  private List<Wanted> wanted(Connection c, ShardFailures failures) throws SQLException {
    Set<ShardId> withWork = pendingWork.shardsWithWork(c, owned.keySet());
    List<Wanted> wanted = new ArrayList<>();
    for (OwnedShard o : new ArrayList<>(owned.values())) {
      if (o.checkAssigned) {
        continue;
      }
      if (!withWork.contains(o.id)) {
        adaptBatchSize(o, 0);
        continue;
      }
      // A bounded target (a list at capacity) takes no more than it has room for; the outbox holds the rest.
      Long room = failures.attempt(o, () -> streams.room(o.streamKey, o.relayKey));
      if (room != null && room > 0) {
        wanted.add(new Wanted(o, (int) Math.min(o.batchSize, room)));
      }
    }
    return wanted;
  }

  /**
   * The cycle's transaction: shard by shard in shard order, the mark of the shard's held batch and the assignment of
   * its next one, always from its lowest unassigned row (a row that commits late with a lower id must go before
   * anything its key commits later). Marking first is what lets the assignment run: a shard has at most one pending
   * batch. Every lease row is locked in shard order, as every statement that locks several of them does, so that
   * two such transactions never deadlock. All of it is one {@link RoundTrip}, which commits as it returns; a held
   * batch of which Redis refused rows (something else writes the stream) needs its mark's outcome before it can
   * re-queue them, and that cycle runs its statements in turn.
   */
  private Cycle markAndAssign(Connection c, List<BatchMarks.Written> toMark, List<Wanted> wanted)
      throws SQLException {
    TreeMap<ShardId, BatchMarks.Written> marking = new TreeMap<>();
    toMark.forEach(w -> marking.put(w.shard().id, w));
    TreeMap<ShardId, Wanted> asked = new TreeMap<>();
    wanted.forEach(w -> asked.put(w.shard().id, w));
    TreeSet<ShardId> order = new TreeSet<>(marking.keySet());
    order.addAll(asked.keySet());
    RoundTrip trip = new RoundTrip();
    List<RoundTrip.Result<BatchMarks.Recorded>> recorded = new ArrayList<>(marking.size());
    List<RoundTrip.Result<OutboxQueries.Batch>> batches = new ArrayList<>(asked.size());
    for (ShardId shard : order) {
      BatchMarks.Written w = marking.get(shard);
      if (w != null) {
        RoundTrip.Part<BatchMarks.Recorded> mark = marks.markPart(w);
        if (mark == null) {
          return Transactions.inOne(c, () -> markAndAssignInTurn(c, order, marking, asked));
        }
        recorded.add(trip.add(mark));
      }
      Wanted want = asked.get(shard);
      if (want != null) {
        OwnedShard o = want.shard();
        batches.add(trip.add(outbox.assignPart(o.id, config.owner(), o.epoch, want.limit(), config.maxBatchBytes())));
      }
    }
    faults.beforeCycleCommit(recorded.size(), batches.size());
    trip.run(c);
    return new Cycle(recorded.stream().map(RoundTrip.Result::get).toList(), List.copyOf(asked.values()),
        batches.stream().map(RoundTrip.Result::get).toList());
  }

  /** {@link #markAndAssign} one statement at a time, in the caller's transaction. */
  private Cycle markAndAssignInTurn(Connection c, Set<ShardId> order, Map<ShardId, BatchMarks.Written> marking,
      Map<ShardId, Wanted> asked) throws SQLException {
    List<BatchMarks.Recorded> recorded = new ArrayList<>(marking.size());
    List<OutboxQueries.Batch> batches = new ArrayList<>(asked.size());
    for (ShardId shard : order) {
      BatchMarks.Written w = marking.get(shard);
      if (w != null) {
        recorded.add(marks.record(c, w, true));
      }
      Wanted want = asked.get(shard);
      if (want != null) {
        OwnedShard o = want.shard();
        batches.add(outbox.assign(c, o.id, config.owner(), o.epoch, want.limit(), config.maxBatchBytes()));
      }
    }
    faults.beforeCycleCommit(recorded.size(), batches.size());
    return new Cycle(recorded, List.copyOf(asked.values()), batches);
  }

  /** The batches a cycle's transaction assigned, once it committed; a shard whose lease went is given up. */
  private List<Assigned> batchesOf(Cycle cycle) {
    List<Assigned> out = new ArrayList<>();
    for (int i = 0; i < cycle.wanted().size(); i++) {
      Wanted want = cycle.wanted().get(i);
      OwnedShard o = want.shard();
      OutboxQueries.Batch batch = cycle.batches().get(i);
      if (!batch.exists()) {
        lost(o, "its lease expired or was taken over before it could assign");
        continue;
      }
      // A full batch may have left rows behind; a short one took all there were when it ran, and rows committed
      // since then notify (or are found by the next idle poll): no second pass over every shard just to see.
      mayHaveMore |= batch.rows().size() >= want.limit();
      adaptBatchSize(o, batch.rows().size());
      if (!batch.rows().isEmpty()) {
        out.add(new Assigned(o, batch.rows()));
      }
    }
    return out;
  }

  private void adaptBatchSize(OwnedShard o, int rows) {
    if (rows >= o.batchSize) {
      o.batchSize = Math.min(config.maxBatchSize(), o.batchSize * 2);
    } else if (rows < o.batchSize / 4) {
      o.batchSize = Math.max(config.minBatchSize(), o.batchSize / 2);
    }
  }

  private record PublishOutcome(int published, long republished) {}

  /**
   * Sends what is assigned to the shard until nothing is left, until two calls in a row send nothing (the target is
   * full: what is left waits, with its IDs, for room), or until the deadline. Returns whether nothing is left.
   */
  boolean sendAssigned(Connection c, OwnedShard o, long deadlineNanos) throws SQLException {
    marks.flush(c);
    o.checkAssigned = true;
    int idle = 0;
    while (o.checkAssigned && owned.containsKey(o.id) && System.nanoTime() < deadlineNanos && idle < 2) {
      PublishOutcome p = publishAssigned(c, o);
      idle = p.published() + p.republished() > 0 ? 0 : idle + 1;
    }
    return !o.checkAssigned;
  }

  /**
   * Sends a page of rows that keep their stream IDs after Redis lost data, else the pending batch recorded in the
   * lease (after a crash or a takeover); clears {@code checkAssigned} when there is neither.
   */
  private PublishOutcome publishAssigned(Connection c, OwnedShard o) throws SQLException {
    // Re-published rows first: their IDs are below any pending batch's, and Redis only accepts rising IDs.
    List<OutboxRow> rows = outbox.assigned(c, o.id, config.maxBatchSize());
    if (!rows.isEmpty()) {
      return send(c, o, rows, false);
    }
    OutboxQueries.Batch pending = outbox.pendingBatch(c, o.id);
    if (pending.exists()) {
      return send(c, o, pending.rows(), true);
    }
    o.checkAssigned = false;
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
        if (outbox.markPublished(c, o.id, config.owner(), o.epoch, List.of(), o.confirmedAdded, true) < 0) {
          lost(o, "its lease was taken over");
        }
      }
      return new PublishOutcome(0, 0);
    }
    int published = 0;
    long republished = 0;
    int from = 0;
    while (from < rows.size() && owned.containsKey(o.id)) {
      int to = from;
      long bytes = 0;
      while (to < rows.size()
          && (endsBatch || to == from || bytes + rows.get(to).payload().length <= config.maxBatchBytes())) {
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
      published += marks.apply(marks.record(c, new BatchMarks.Written(o, chunk, result), endsBatch));
      if (result.statuses().contains(EntryStatus.NOT_SENT)) {
        break; // the target is full: what follows must wait, in order, for the next attempt
      }
    }
    return new PublishOutcome(published, republished);
  }

  private long streamLost(Connection c, OwnedShard o, long redisCount) throws SQLException {
    long republished = loss.requeue(c, o, redisCount);
    o.confirmedAdded = 0;
    o.checkAssigned = true;
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
    lostHandler.accept(o, why);
  }

  private void notify(Runnable callback) {
    notifier.accept(callback);
  }
}
