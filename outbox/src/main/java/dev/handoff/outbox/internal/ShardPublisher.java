package dev.handoff.outbox.internal;

import dev.handoff.outbox.Relay;
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
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final RelayListener listener;
  private final RedisTransport streams;
  private final LeaseQueries leases;
  private final OutboxQueries outbox;
  private final PendingWork pendingWork;
  private final StreamLoss loss;
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
    this.leases = leases;
    this.outbox = outbox;
    this.pendingWork = new PendingWork(config.schema());
    this.loss = new StreamLoss(config.owner(), streams, outbox);
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
   * One cycle over the owned shards: what is already assigned first; then a new batch for every shard that has rows,
   * all assigned in one transaction, written to Redis shard after shard, and all marked in one transaction after the
   * last write. Until its mark, a written batch stays the lease's pending batch: after a failure or a crash it is
   * sent again with its IDs and found. A shard whose node fails waits so ({@link ShardFailures}) while the others go
   * on; the cycle then throws that failure. Sets {@link #mayHaveMore()}.
   */
  RelayCycle publishOwned(boolean assignedOnly) throws SQLException {
    int published = 0;
    long republished = 0;
    mayHaveMore = false;
    if (owned.isEmpty()) {
      return new RelayCycle(0, 0, 0, 0);
    }
    int assigned = 0;
    ShardFailures failures = new ShardFailures();
    try (Connection c = connections.get()) {
      Set<ShardId> withWork = assignedOnly ? Set.of() : pendingWork.shardsWithWork(c, owned.keySet());
      List<Wanted> wanted = new ArrayList<>();
      for (OwnedShard o : new ArrayList<>(owned.values())) {
        if (o.checkAssigned) {
          PublishOutcome p = failures.attempt(o, () -> publishAssigned(c, o));
          if (p == null) {
            continue;
          }
          published += p.published;
          republished += p.republished;
          mayHaveMore |= p.published + p.republished > 0;
        }
        if (assignedOnly || !owned.containsKey(o.id) || o.checkAssigned) {
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
      List<Written> unrecorded = new ArrayList<>();
      for (Assigned a : assignAll(c, wanted)) {
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
        unrecorded.add(new Written(o, rows, result));
      }
      published += markAll(c, unrecorded);
    }
    maintenance.trimAfterPublish(owned.values().stream().filter(o -> !failures.failed(o)).toList());
    failures.rethrow();
    return new RelayCycle(owned.size(), assigned, published, republished);
  }

  /** A shard that has rows, and how many it may take now. */
  private record Wanted(OwnedShard shard, int limit) {}

  /** A new batch, committed as its shard's pending batch. */
  private record Assigned(OwnedShard shard, List<OutboxRow> rows) {}

  /**
   * Assigns the next batch of every wanted shard in one transaction, always from the shard's lowest unassigned row: a
   * row that commits late with a lower id must go before anything its key commits later. The lease rows are locked
   * in shard order, as every statement that locks several of them does, so that two such transactions never
   * deadlock.
   */
  private List<Assigned> assignAll(Connection c, List<Wanted> wanted) throws SQLException {
    if (wanted.isEmpty()) {
      return List.of();
    }
    wanted.sort(Comparator.comparing(w -> w.shard().id));
    List<OutboxQueries.Batch> batches = Transactions.inOne(c, () -> {
      List<OutboxQueries.Batch> out = new ArrayList<>(wanted.size());
      for (Wanted w : wanted) {
        OwnedShard o = w.shard();
        out.add(outbox.assign(c, o.id, config.owner(), o.epoch, w.limit(), config.maxBatchBytes()));
      }
      return out;
    });
    List<Assigned> out = new ArrayList<>();
    for (int i = 0; i < wanted.size(); i++) {
      OwnedShard o = wanted.get(i).shard();
      OutboxQueries.Batch batch = batches.get(i);
      if (!batch.exists()) {
        lost(o, "its lease expired or was taken over before it could assign");
        continue;
      }
      // A full batch may have left rows behind; a short one took all there were when it ran, and rows committed
      // since then notify (or are found by the next idle poll): no second pass over every shard just to see.
      mayHaveMore |= batch.rows().size() >= wanted.get(i).limit();
      adaptBatchSize(o, batch.rows().size());
      if (!batch.rows().isEmpty()) {
        out.add(new Assigned(o, batch.rows()));
      }
    }
    return out;
  }

  /** Marks every batch Redis accepted in this cycle, in one transaction; the effects follow its commit. */
  private int markAll(Connection c, List<Written> written) throws SQLException {
    if (written.isEmpty()) {
      return 0;
    }
    written.sort(Comparator.comparing(w -> w.shard().id));
    List<Recorded> recorded = Transactions.inOne(c, () -> {
      List<Recorded> out = new ArrayList<>(written.size());
      for (Written w : written) {
        out.add(record(c, w.shard(), w.rows(), w.result(), true));
      }
      return out;
    });
    int marked = 0;
    for (Recorded r : recorded) {
      marked += apply(r);
    }
    return marked;
  }

  private void adaptBatchSize(OwnedShard o, int rows) {
    if (rows >= o.batchSize) {
      o.batchSize = Math.min(config.maxBatchSize(), o.batchSize * 2);
    } else if (rows < o.batchSize / 4) {
      o.batchSize = Math.max(config.minBatchSize(), o.batchSize / 2);
    }
  }

  private record PublishOutcome(int published, long republished) {}

  /** A pending batch Redis accepted, not yet recorded in the database. */
  private record Written(OwnedShard shard, List<OutboxRow> rows, PublishResult result) {}

  /**
   * Sends what is assigned to the shard until nothing is left, until two calls in a row send nothing (the target is
   * full: what is left waits, with its IDs, for room), or until the deadline. Returns whether nothing is left.
   */
  boolean sendAssigned(Connection c, OwnedShard o, long deadlineNanos) throws SQLException {
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
      published += confirm(c, o, chunk, result, endsBatch);
      if (result.statuses().contains(EntryStatus.NOT_SENT)) {
        break; // the target is full: what follows must wait, in order, for the next attempt
      }
    }
    return new PublishOutcome(published, republished);
  }

  /** Marks what Redis holds as published, and re-queues what it refused without holding. */
  private int confirm(Connection c, OwnedShard o, List<OutboxRow> chunk, PublishResult result, boolean endsBatch)
      throws SQLException {
    return apply(record(c, o, chunk, result, endsBatch));
  }

  /** What a mark wrote, for {@link #apply} once its transaction committed. */
  private record Recorded(OwnedShard shard, int marked, long entriesAdded, long oldestCreated, int alreadyPresent) {}

  /** The database side of a confirmation: the mark, and the re-queueing of what Redis refused. */
  private Recorded record(Connection c, OwnedShard o, List<OutboxRow> chunk, PublishResult result, boolean endsBatch)
      throws SQLException {
    List<OutboxRow> present = new ArrayList<>(chunk.size());
    List<OutboxRow> refused = new ArrayList<>();
    long oldestCreated = Long.MAX_VALUE;
    int alreadyPresent = 0;
    for (int i = 0; i < chunk.size(); i++) {
      OutboxRow row = chunk.get(i);
      EntryStatus status = result.statuses().get(i);
      if (status == EntryStatus.ALREADY_PRESENT) {
        alreadyPresent++;
      }
      if (status == EntryStatus.ADDED || status == EntryStatus.ALREADY_PRESENT) {
        present.add(row);
        oldestCreated = Math.min(oldestCreated, row.createdAt().toEpochMilli());
      } else if (status == EntryStatus.NOT_SENT) {
        // Not written (the list is full). A pending batch is cleared below, so these rows lose their IDs and are
        // assigned again (in id order, ahead of anything newer); re-published rows keep theirs and wait.
        continue;
      } else {
        refused.add(row);
      }
    }
    int marked = outbox.markPublished(c, o.id, config.owner(), o.epoch, present, result.entriesAdded(), endsBatch);
    if (marked >= 0 && !refused.isEmpty()) {
      reassign(c, o, refused);
    }
    return new Recorded(o, marked, result.entriesAdded(), oldestCreated, alreadyPresent);
  }

  /** The relay's side of a committed confirmation: its counters and the listener. */
  private int apply(Recorded r) {
    OwnedShard o = r.shard();
    if (r.marked() < 0) {
      lost(o, "its lease was taken over while it published (the entries it added are in the stream and count)");
      return 0;
    }
    o.confirmedAdded = Math.max(o.confirmedAdded, r.entriesAdded());
    o.sinceTrim += r.marked();
    if (r.marked() > 0) {
      notify(() -> listener.published(o.id, r.marked(), r.oldestCreated()));
    }
    if (r.alreadyPresent() > 0) {
      notify(() -> listener.alreadyPresent(o.id, r.alreadyPresent()));
    }
    return r.marked();
  }

  private void reassign(Connection c, OwnedShard o, List<OutboxRow> refused) throws SQLException {
    long[] ids = refused.stream().mapToLong(OutboxRow::id).toArray();
    StreamId top = streams.lastGeneratedId(o.streamKey, o.relayKey);
    String detail = "stream " + o.streamKey + " refused " + refused.size() + " entries (first outbox id "
        + ids[0] + ", stream id " + refused.get(0).streamId() + ") that it does not hold; its top is " + top
        + ": something else writes this stream. The rows get fresh IDs.";
    log.error("relay {}: {}", config.owner(), detail);
    leases.raiseLastAssigned(c, o.id, config.owner(), o.epoch, top);
    outbox.unassign(c, o.id, config.owner(), o.epoch, ids);
    notify(() -> listener.anomaly(o.id, refused.size(), detail));
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
