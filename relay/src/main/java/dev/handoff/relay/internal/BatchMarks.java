package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.internal.RedisTransport.EntryStatus;
import dev.handoff.relay.internal.RedisTransport.PublishResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The database side of a batch Redis accepted: its mark (fenced by the lease epoch), the re-queue of what Redis
 * refused, and, once the mark committed, the relay's counters and listener calls.
 *
 * <p>The batches a busy cycle wrote are <em>held</em> by the {@link ShardTable}, unmarked, and marked by the next
 * cycle's transaction before it assigns: one commit per cycle instead of two. A held batch is still its shard's
 * pending batch in the lease row, so a crash or a failure before that commit is what it always was: the batch is
 * sent again with its IDs and found in the stream. Each step is written once, as statements added to a
 * {@link RoundTrip}: sent together with the cycle's other statements, or one at a time where a re-queue needs the
 * mark's outcome. Confined to the relay's work lock; not thread-safe.
 */
final class BatchMarks {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  /** A pending batch Redis accepted, not yet recorded in the database. */
  record Written(OwnedShard shard, List<OutboxRow> rows, PublishResult result) {}

  /**
   * What a mark wrote, for {@link #apply} once its transaction committed: {@code addedBefore} is the database's count
   * of entries added before the mark, and {@code rewindReported} whether the mark already reported a rewind.
   */
  record Recorded(OwnedShard shard, int marked, long entriesAdded, long oldestCreated, int alreadyPresent,
      long addedBefore, boolean rewindReported) {}

  private final RelayConfig config;
  private final RelayListener listener;
  private final RedisTransport streams;
  private final LeaseQueries leases;
  private final OutboxQueries outbox;
  private final ShardTable table;
  private final Consumer<Runnable> notifier;
  private final DatabaseRewinds rewinds;

  BatchMarks(RelayConfig config, RelayCollaborators collaborators, RedisTransport streams, LeaseQueries leases,
      OutboxQueries outbox, ShardTable table, Consumer<Runnable> notifier,
      DatabaseRewinds rewinds) {
    this.rewinds = rewinds;
    this.config = config;
    this.listener = collaborators.listener();
    this.streams = streams;
    this.leases = leases;
    this.outbox = outbox;
    this.table = table;
    this.notifier = notifier;
  }

  /**
   * Marks every batch Redis accepted, in one transaction, sent as one round trip unless Redis refused rows of one of
   * them (their re-queue needs the mark's outcome); the effects follow its commit. Should the transaction fail, the
   * batches' shards send them again.
   */
  int markAll(Connection c, List<Written> written) throws SQLException {
    if (written.isEmpty()) {
      return 0;
    }
    written.sort(Comparator.comparing(w -> w.shard().id));
    List<Recorded> recorded;
    try {
      recorded = Transactions.inOne(c, () -> {
        RoundTrip trip = written.stream().anyMatch(BatchMarks::needsMarkOutcome) ? RoundTrip.atOnce(c)
            : new RoundTrip();
        Supplier<List<Recorded>> marked = recordEach(c, trip, written);
        trip.runAndCommit(c);
        return marked.get();
      });
    } catch (SQLException | RuntimeException | Error e) {
      written.forEach(w -> table.resend(w.shard()));
      throw e;
    }
    return applyAll(recorded);
  }

  /**
   * The marks of {@code written} (in shard order), each ending its pending batch, added to {@code trip}: one statement
   * for all of them, or one each on a trip that {@link RoundTrip#runsAtOnce} (a re-queue needs its mark's outcome).
   */
  Supplier<List<Recorded>> recordEach(Connection c, RoundTrip trip, List<Written> written) throws SQLException {
    if (written.isEmpty()) {
      return List::of;
    }
    if (!trip.runsAtOnce()) {
      return recordAll(trip, written);
    }
    List<Supplier<Recorded>> marked = new ArrayList<>(written.size());
    for (Written w : written) {
      marked.add(record(c, trip, w, true));
    }
    return () -> marked.stream().map(Supplier::get).toList();
  }

  /** {@link #apply} for each; the number of rows marked. */
  int applyAll(List<Recorded> recorded) {
    int marked = 0;
    for (Recorded r : recorded) {
      marked += apply(r);
    }
    return marked;
  }

  /**
   * Rows sent again with their stream IDs after Redis lost data (not a pending batch) that the stream no longer holds,
   * below its oldest entry: the copy had them, and a trim removed them after every group had finished them, between
   * the loss check and this write. They were delivered: they count as published, since adding them again under fresh
   * IDs would put their messages in the stream twice.
   */
  private Sorted trimmedAfterDelivery(OwnedShard o, Written w, Sorted s) {
    StreamId floor = streams.survivingFloor(o.streamKey, o.relayKey);
    List<OutboxRow> present = new ArrayList<>(s.present());
    List<OutboxRow> refused = new ArrayList<>();
    for (int i = 0; i < w.rows().size(); i++) {
      OutboxRow row = w.rows().get(i);
      if (!s.refused().contains(row)) {
        continue;
      }
      if (w.result().statuses().get(i) == EntryStatus.REFUSED_ABSENT && row.streamId().compareTo(floor) < 0) {
        present.add(row);
      } else {
        refused.add(row);
      }
    }
    if (present.size() > s.present().size()) {
      log.info("relay {}: {} of the rows sent again to {} after its loss were trimmed meanwhile, every group having"
          + " finished them: they count as published, not added again", config.owner(),
          present.size() - s.present().size(), o.streamKey);
    }
    return new Sorted(present, refused, s.oldestCreated(), s.alreadyPresent(), s.heldByOther());
  }

  /** What Redis did with a written batch's rows. */
  private record Sorted(List<OutboxRow> present, List<OutboxRow> refused, long oldestCreated, int alreadyPresent,
      int heldByOther) {}

  private static Sorted sort(Written w) {
    List<OutboxRow> chunk = w.rows();
    List<OutboxRow> present = new ArrayList<>(chunk.size());
    List<OutboxRow> refused = new ArrayList<>();
    long oldestCreated = Long.MAX_VALUE;
    int alreadyPresent = 0;
    int heldByOther = 0;
    for (int i = 0; i < chunk.size(); i++) {
      OutboxRow row = chunk.get(i);
      EntryStatus status = w.result().statuses().get(i);
      if (status == EntryStatus.ALREADY_PRESENT) {
        alreadyPresent++;
      } else if (status == EntryStatus.PRESENT_WITH_OTHER_MESSAGE) {
        heldByOther++;
      }
      if (status == EntryStatus.ADDED || status == EntryStatus.ALREADY_PRESENT) {
        present.add(row);
        oldestCreated = Math.min(oldestCreated, row.createdAt().toEpochMilli());
      } else if (status.refused()) {
        refused.add(row);
      }
      // NOT_SENT: not written (the list is full). A pending batch is cleared below, so these rows lose their IDs and
      // are assigned again (in id order, ahead of anything newer); re-published rows keep theirs and wait.
    }
    return new Sorted(present, refused, oldestCreated, alreadyPresent, heldByOther);
  }

  /**
   * Whether recording {@code w} needs its mark's outcome before its next statement: Redis refused some of its rows,
   * and their re-queue depends on what the mark found. Such a batch is recorded with a {@link RoundTrip#atOnce}.
   */
  static boolean needsMarkOutcome(Written w) {
    return w.result().statuses().stream().anyMatch(EntryStatus::refused);
  }

  /** {@link #record} on its own, each statement committing as it runs (auto-commit); its outcome. */
  Recorded recordNow(Connection c, Written w, boolean endsBatch) throws SQLException {
    return record(c, RoundTrip.atOnce(c), w, endsBatch).get();
  }

  /**
   * The database side of a confirmation, added to {@code trip}: the mark (ending the pending batch when
   * {@code endsBatch}), and the re-queue of what Redis refused, which needs a trip that {@link RoundTrip#runsAtOnce}.
   * What it recorded is readable once the trip ran.
   */
  Supplier<Recorded> record(Connection c, RoundTrip trip, Written w, boolean endsBatch) throws SQLException {
    OwnedShard o = w.shard();
    Sorted sorted = sort(w);
    if (!endsBatch && !sorted.refused().isEmpty()) {
      sorted = trimmedAfterDelivery(o, w, sorted);
    }
    Sorted s = sorted;
    if (!s.refused().isEmpty() && !trip.runsAtOnce()) {
      throw new IllegalStateException("the re-queue of rows " + o.streamKey + " refused needs its mark's outcome");
    }
    RoundTrip.Result<OutboxQueries.Mark> mark = trip.add(outbox.markPart(o.id, config.owner(), o.epoch, s.present(),
        w.result().entriesAdded(), endsBatch));
    boolean rewound = !s.refused().isEmpty() && mark.get().marked() >= 0
        && reassign(c, o, s, w.result(), mark.get().addedBefore());
    return () -> new Recorded(o, mark.get().marked(), w.result().entriesAdded(), s.oldestCreated(),
        s.alreadyPresent(), mark.get().addedBefore(), rewound);
  }

  /**
   * {@link #record} of every batch in {@code written}, each ending its pending batch, as one statement added to
   * {@code trip}: for batches of which Redis refused nothing ({@link #needsMarkOutcome} false for each), in shard
   * order. What they recorded is readable once the trip ran.
   */
  private Supplier<List<Recorded>> recordAll(RoundTrip trip, List<Written> written) throws SQLException {
    List<OutboxQueries.MarkRequest> requests = new ArrayList<>(written.size());
    List<Sorted> sorted = new ArrayList<>(written.size());
    for (Written w : written) {
      if (needsMarkOutcome(w)) {
        throw new IllegalStateException("the re-queue of rows " + w.shard().streamKey + " refused needs its mark's"
            + " outcome");
      }
      Sorted s = sort(w);
      sorted.add(s);
      requests.add(new OutboxQueries.MarkRequest(w.shard().id, w.shard().epoch, s.present(),
          w.result().entriesAdded(), true));
    }
    RoundTrip.Result<List<OutboxQueries.Mark>> marks = trip.add(outbox.markAllPart(requests, config.owner()));
    return () -> {
      List<Recorded> recorded = new ArrayList<>(written.size());
      for (int i = 0; i < written.size(); i++) {
        Written w = written.get(i);
        OutboxQueries.Mark mark = marks.get().get(i);
        recorded.add(new Recorded(w.shard(), mark.marked(), w.result().entriesAdded(), sorted.get(i).oldestCreated(),
            sorted.get(i).alreadyPresent(), mark.addedBefore(), false));
      }
      return recorded;
    };
  }

  /** The relay's side of a committed confirmation: its counters and the listener. */
  int apply(Recorded r) {
    OwnedShard o = r.shard();
    if (r.marked() < 0) {
      table.lose(o, "its lease was taken over while it published (the entries it added are in the stream"
          + " and count)");
      return 0;
    }
    // This relay recorded confirmedAdded under this lease, and only it writes the count: a database that counts
    // fewer lost this relay's own commits, as a failover to a standby that had not received them does. A relay that
    // went on through the failover meets it here, at its first mark on the new primary, before the mark's count
    // covers it up.
    if (!r.rewindReported() && r.addedBefore() >= 0 && r.addedBefore() < o.confirmedAdded) {
      rewinds.check(o.id, o.streamKey, o.confirmedAdded, r.addedBefore(), 0, "recording a batch", notifier);
    }
    o.confirmedAdded = Math.max(o.confirmedAdded, r.entriesAdded());
    o.sinceTrim += r.marked();
    if (r.marked() > 0) {
      notifier.accept(() -> listener.published(o.id, r.marked(), r.oldestCreated()));
    }
    if (r.alreadyPresent() > 0) {
      notifier.accept(() -> listener.alreadyPresent(o.id, r.alreadyPresent()));
    }
    return r.marked();
  }

  /**
   * Gives fresh IDs above the stream's top to rows whose IDs Redis refused, and says why, in one of three lines: the
   * database went back in time (Redis counts more entries added by the relays than the database recorded before
   * this batch), another message holds the ID (another writer used this stream's IDs), or the ID is absent below the
   * top (trimmed, if below the oldest entry; otherwise another writer raised the top or deleted entries).
   */
  private boolean reassign(Connection c, OwnedShard o, Sorted s, PublishResult result, long recordedBefore)
      throws SQLException {
    List<OutboxRow> refused = s.refused();
    long[] ids = refused.stream().mapToLong(OutboxRow::id).toArray();
    StreamId top = streams.lastGeneratedId(o.streamKey, o.relayKey);
    long addedNow = result.statuses().stream().filter(st -> st == EntryStatus.ADDED).count();
    String head = "stream " + o.streamKey + " refused " + refused.size() + " entries (first outbox id " + ids[0]
        + ", stream id " + refused.get(0).streamId() + ")";
    String detail;
    boolean rewound = rewinds.check(o.id, o.streamKey, result.entriesAdded() - addedNow, recordedBefore,
        s.alreadyPresent(), "publishing", notifier);
    if (rewound) {
      detail = head + ": the database went back in time and handed out again IDs the stream holds; its top is "
          + top + ". The rows get fresh IDs.";
    } else if (s.heldByOther() > 0) {
      detail = head + ": another message holds their IDs in the stream, and the database does not know it: another"
          + " writer adds entries with this stream's IDs; its top is " + top + ". The rows get fresh IDs.";
    } else if (refused.get(refused.size() - 1).streamId().compareTo(streams.survivingFloor(o.streamKey, o.relayKey))
        < 0) {
      detail = head + " that it does not hold, below its oldest entry: those IDs were trimmed; its top is " + top
          + ". The rows get fresh IDs.";
    } else {
      detail = head + " that it does not hold, below its top " + top + ": something else writes this stream (it"
          + " raised the top, or deleted entries). The rows get fresh IDs.";
    }
    log.error("relay {}: {}", config.owner(), detail);
    leases.raiseLastAssigned(c, o.id, config.owner(), o.epoch, top);
    outbox.unassign(c, o.id, config.owner(), o.epoch, ids);
    ShardId shard = o.id;
    notifier.accept(() -> listener.anomaly(shard, refused.size(), detail));
    return rewound;
  }
}
