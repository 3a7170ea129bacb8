package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shards this relay holds the lease of, and all it knows of them: each one's state ({@link OwnedShard}), which
 * of them must first send what is already assigned to them (their pending batch after a failure, a crash or a
 * takeover; rows re-published after Redis lost data), and the batches written to Redis whose marks wait for the next
 * cycle's transaction. The lease, publishing and maintenance jobs change that state through here only.
 *
 * <p>Whatever looks at a shard's pending batch or at its published rows (a loss check, a re-send, a release,
 * maintenance) reads the shards through {@link #settled}, which marks the held batches first: it sees what an
 * immediate mark would have left, never a batch written and not yet marked. At most one batch per shard is ever
 * unconfirmed, because a shard's next batch is assigned in the transaction that marks the previous one.
 *
 * <p>Confined to the relay's work lock, except {@link #view()} and the epochs handed to the {@link LeaseRenewer},
 * which any thread may read.
 */
final class ShardTable {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  /** What is told of a lost lease besides the listener: the relay's health. */
  interface LostLeases {
    void lost(ShardId shard, long epoch, String why);
  }

  private final String owner;
  private final RelayListener listener;
  private final Consumer<Runnable> notifier;
  private final LeaseRenewer renewer;
  private final LostLeases onLost;
  private final BatchMarks marks;
  private final Map<ShardId, OwnedShard> owned = new LinkedHashMap<>();
  private final Set<ShardId> toResend = new HashSet<>();
  private List<BatchMarks.Written> held = new ArrayList<>();
  private volatile Set<ShardId> view = Set.of();

  ShardTable(RelayConfig config, RelayCollaborators collaborators, RedisTransport streams, LeaseQueries leases,
      OutboxQueries outbox, Consumer<Runnable> notifier, DatabaseRewinds rewinds, LeaseRenewer renewer,
      LostLeases onLost) {
    this.owner = config.owner();
    this.listener = collaborators.listener();
    this.notifier = notifier;
    this.renewer = renewer;
    this.onLost = onLost;
    this.marks = new BatchMarks(config, collaborators, streams, leases, outbox, this, notifier, rewinds);
  }

  /** How written batches are recorded in the database. */
  BatchMarks marks() {
    return marks;
  }

  // --- the shards -----------------------------------------------------------------------------------------------

  /** The shards this relay owns, as of the last change; any thread may read it. */
  Set<ShardId> view() {
    return view;
  }

  /** The owned shards, in the order they were taken; a copy, so that the caller may give shards up meanwhile. */
  List<OwnedShard> shards() {
    return new ArrayList<>(owned.values());
  }

  /**
   * The owned shards once the held batches are marked (in one transaction on {@code c}): for whatever looks at a
   * shard's pending batch or published rows.
   */
  List<OwnedShard> settled(Connection c) throws SQLException {
    flush(c);
    return shards();
  }

  /** Whether {@code shard} is owned. */
  boolean holds(ShardId shard) {
    return owned.containsKey(shard);
  }

  /** The owned shard, or null. */
  OwnedShard get(ShardId shard) {
    return owned.get(shard);
  }

  Set<ShardId> ids() {
    return Collections.unmodifiableSet(owned.keySet());
  }

  int size() {
    return owned.size();
  }

  boolean isEmpty() {
    return owned.isEmpty();
  }

  /** A lease just taken: its shard first sends whatever the previous owner left assigned. */
  void take(OwnedShard o) {
    owned.put(o.id, o);
    toResend.add(o.id);
    publishView();
  }

  /** A lease given back by this relay; returns whether it was still owned. */
  boolean giveBack(OwnedShard o) {
    boolean was = owned.remove(o.id) != null;
    toResend.remove(o.id);
    publishView();
    return was;
  }

  /** Forgets every shard (after releasing them all). */
  void clear() {
    owned.clear();
    toResend.clear();
    publishView();
  }

  /** Forgets a shard whose lease another relay holds now; the relay stops writing that stream. */
  void lose(OwnedShard o, String why) {
    if (owned.remove(o.id) != null) {
      toResend.remove(o.id);
      publishView();
      log.warn("relay {} lost {} (epoch {}): {}; it stops writing that stream", owner, o.id, o.epoch, why);
      onLost.lost(o.id, o.epoch, why);
      notifier.accept(() -> listener.leaseLost(o.id, o.epoch, false));
    }
  }

  /** Publishes the owned shards to the readers of {@link #view()} and their epochs to the renewer. */
  private void publishView() {
    view = Collections.unmodifiableSet(new TreeSet<>(owned.keySet()));
    Map<ShardId, Long> epochs = new HashMap<>();
    owned.forEach((id, o) -> epochs.put(id, o.epoch));
    renewer.owned(epochs);
  }

  // --- what is already assigned ---------------------------------------------------------------------------------

  /** {@code o} must send what is assigned to it (its pending batch, re-published rows) before anything new. */
  void resend(OwnedShard o) {
    if (owned.get(o.id) == o) {
      toResend.add(o.id);
    }
  }

  /** Every owned shard must look for what is assigned to it: after a failure nothing is known of in-flight rows. */
  void resendAll() {
    toResend.addAll(owned.keySet());
  }

  /** Whether {@code o} has to send what is assigned to it first. */
  boolean mustResend(OwnedShard o) {
    return toResend.contains(o.id);
  }

  /** {@code o} has nothing assigned left to send. */
  void resent(OwnedShard o) {
    toResend.remove(o.id);
  }

  // --- written batches whose marks are held ---------------------------------------------------------------------

  /** Keeps a cycle's written batches for the next cycle's transaction to mark. */
  void hold(List<BatchMarks.Written> written) {
    held.addAll(written);
  }

  /** Whether written batches wait for their mark. */
  boolean holding() {
    return !held.isEmpty();
  }

  /**
   * Hands the held batches over to a transaction that marks them, in shard order. Should that transaction fail, its
   * caller {@link #resend}s their shards: they are pending batches again, to be sent with their IDs.
   */
  List<BatchMarks.Written> takeHeld() {
    List<BatchMarks.Written> out = held;
    held = new ArrayList<>();
    out.sort(Comparator.comparing(w -> w.shard().id));
    return out;
  }

  /**
   * Forgets the held batches after a failure: nothing is known of the cycle that failed, and each stays its shard's
   * pending batch, sent again (and found in the stream) once its shard resends.
   */
  void forgetHeld() {
    held.forEach(w -> resend(w.shard()));
    held = new ArrayList<>();
  }

  /** Marks what is held now, in one transaction; the rows marked. */
  int flush(Connection c) throws SQLException {
    return held.isEmpty() ? 0 : marks.markAll(c, takeHeld());
  }
}
