package dev.handoff.relay.internal;


import dev.handoff.core.ShardId;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.StreamId;
import dev.handoff.core.internal.TopicRegistry;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's lease job: one writer per stream through the fenced leases of {@code relay_lease}. Every third of the
 * TTL it gives shards above the fair share back to new peers, takes free or expired ones, and asks the publisher to
 * check the owned streams for loss. A started relay's {@link LeaseRenewer} renews the leases on its own thread;
 * otherwise ({@code relayOnce}) the check renews them. Used under the relay's work lock; {@link #ownedView()} may be
 * read from any thread.
 */
final class LeaseKeeper {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final RelayListener listener;
  private final LeaseQueries leases;
  private final RedisTransport streams;
  private final List<ShardId> allShards;
  private final Map<ShardId, OwnedShard> owned;
  private final ShardPublisher.Connections connections;
  private final LeaseRenewer renewer;
  private final Consumer<Runnable> notifier;
  private final DatabaseRewinds rewinds;
  private ShardPublisher publisher;
  private volatile Set<ShardId> ownedView = Set.of();
  private boolean rowsEnsured;
  private long nextLeaseCheckNanos;

  LeaseKeeper(RelayConfig config, RelayCollaborators collaborators, LeaseQueries leases, RedisTransport streams,
      Map<ShardId, OwnedShard> owned, ShardPublisher.Connections connections, LeaseRenewer renewer,
      Consumer<Runnable> notifier, DatabaseRewinds rewinds) {
    this.rewinds = rewinds;
    this.config = config;
    this.listener = collaborators.listener();
    this.leases = leases;
    this.streams = streams;
    this.allShards = config.shards();
    this.owned = owned;
    this.connections = connections;
    this.renewer = renewer;
    this.notifier = notifier;
  }

  /** The publisher that sends what a shard still has assigned before it is given up, and probes for loss. */
  void publisher(ShardPublisher publisher) {
    this.publisher = publisher;
  }

  /** The shards this relay owns, as of the last lease check. */
  Set<ShardId> ownedView() {
    return ownedView;
  }

  /** Makes the next {@link #manage} check the leases whatever the schedule (after a failure). */
  void checkSoon() {
    nextLeaseCheckNanos = 0;
  }

  /** When the next lease check is due, in {@link System#nanoTime()} terms. */
  long nextCheckNanos() {
    return nextLeaseCheckNanos;
  }

  /**
   * Gives every owned shard back and leaves the membership: after {@code sendAssigned} had its chance, for a clean
   * stop, so that a peer takes the shards at once instead of after the TTL. Returns whether nothing was left.
   */
  boolean releaseAll(Connection c, long deadlineNanos) throws SQLException {
    publisher.flushMarks(c);
    boolean drained = true;
    for (OwnedShard o : new ArrayList<>(owned.values())) {
      renewer.checkIn();
      drained &= publisher.sendAssigned(c, o, deadlineNanos);
      if (owned.containsKey(o.id)) {
        leases.release(c, o.id, config.owner(), o.epoch);
        notify(() -> listener.leaseLost(o.id, o.epoch, true));
      }
    }
    owned.clear();
    publishView();
    leases.leave(c, config.owner());
    return drained;
  }


  /**
   * Declares each of {@code config}'s topics with its shard count, or checks that count against the one on record.
   *
   * @throws dev.handoff.core.TopicMismatchException naming the topic and both counts
   */
  static void requireDeclaredShards(Connection c, RelayConfig config) throws SQLException {
    TopicRegistry registry = new TopicRegistry(config.schema());
    for (TopicConfig t : config.topics()) {
      registry.requireSame(c, t.name(), t.shards(), "relay " + config.owner());
    }
  }

  /**
   * Gives up the shards whose renewal found another owner; then, when due ({@code force}: now), renews (unless the
   * {@link LeaseRenewer} does, on its own thread), gives shards above the fair share back, takes free or expired
   * ones, and checks owned streams for loss.
   */
  void manage(boolean force) throws SQLException {
    dropLost();
    long now = System.nanoTime();
    if (!force && now < nextLeaseCheckNanos) {
      return;
    }
    nextLeaseCheckNanos = now + config.leases().ttl().toNanos() / 3;
    try (Connection c = connections.get()) {
      // The loss check below must see the rows of held batches as published, as an immediate mark leaves them.
      publisher.flushMarks(c);
      // The first check renews here too, so that this relay counts itself among the live ones from the start.
      boolean renewHere = !renewer.running() || !rowsEnsured;
      if (!rowsEnsured) {
        // Before any row is created: a refused relay must not claim a new topic's shards for its prefix, nor shards
        // of a count the topic was not declared with.
        leases.requireKeyPrefix(c, config.keyPrefix());
        requireDeclaredShards(c, config);
        for (ShardId shard : allShards) {
          leases.ensureRow(c, shard, config.keyPrefix());
        }
        rowsEnsured = true;
      }
      if (renewHere) {
        renewer.renewNow(c);
        dropLost();
      }
      int live = leases.liveMembers(c, config.leases().ttl());
      int target = (allShards.size() + live - 1) / live;

      ShardFailures probes = new ShardFailures();
      for (OwnedShard o : new ArrayList<>(owned.values())) {
        probes.attempt(o, () -> {
          publisher.probe(c, o);
          return o;
        });
      }
      // All failing is Redis down: the cycle fails, as it always did. Some failing is one cluster node down or a slot
      // moving: the lease work goes on (a failed cycle brings the next check on at once, so failing here would stop
      // every shard), and the publish cycle reports the failure when it writes to that shard.
      if (probes.count() > 0 && probes.count() >= owned.size()) {
        probes.rethrow();
      } else if (probes.count() > 0) {
        log.warn("relay {}: the loss check of {} shard(s) failed, checked again at the next lease check: {}",
            config.owner(), probes.count(), probes.first().toString());
      }
      // More relays than before: give back shards above the fair share, so others can take them now.
      List<OwnedShard> mine = new ArrayList<>(owned.values());
      for (int i = mine.size() - 1; i >= 0 && owned.size() > target; i--) {
        OwnedShard o = mine.get(i);
        // What cannot go now (a full list) keeps its IDs for the next owner: never hold the shard to wait for it.
        publisher.sendAssigned(c, o, System.nanoTime() + config.leases().ttl().toNanos() / 3);
        if (owned.remove(o.id) != null) {
          leases.release(c, o.id, config.owner(), o.epoch);
          log.info("relay {} released {} (epoch {}) to rebalance across {} relays", config.owner(), o.id, o.epoch,
              live);
          notify(() -> listener.leaseLost(o.id, o.epoch, true));
        }
      }
      // Start the search at an offset of our own, so that relays starting together do not chase the same shards.
      int offset = Math.floorMod(config.owner().hashCode(), Math.max(1, allShards.size()));
      for (int i = 0; i < allShards.size() && owned.size() < target; i++) {
        ShardId shard = allShards.get((offset + i) % allShards.size());
        if (owned.containsKey(shard)) {
          continue;
        }
        LeaseQueries.Lease lease = leases.acquire(c, shard, config.owner(), config.leases().ttl());
        if (lease != null) {
          takeOver(c, shard, lease);
        }
      }
      publishView();
    }
  }

  /** Forgets the shards whose lease renewal found another relay holding them (with the epoch this relay had). */
  private void dropLost() {
    for (LeaseRenewer.Lost l : renewer.takeLost()) {
      OwnedShard o = owned.get(l.shard());
      if (o != null && o.epoch == l.epoch()) {
        lost(o, "its renewal found another relay holding it");
      }
    }
  }

  /** Publishes the owned shards to the readers of {@link #ownedView()} and to the renewer. */
  private void publishView() {
    ownedView = Collections.unmodifiableSet(new TreeSet<>(owned.keySet()));
    Map<ShardId, Long> epochs = new HashMap<>();
    owned.forEach((id, o) -> epochs.put(id, o.epoch));
    renewer.owned(epochs);
  }

  private void takeOver(Connection c, ShardId shard, LeaseQueries.Lease lease) throws SQLException {
    String key = streams.key(config.keyPrefix(), shard);
    OwnedShard o = new OwnedShard(shard, key, streams.relayKey(key), lease.epoch(), lease.entriesAdded(),
        config.publishing().minBatchSize());
    o.paused = lease.paused(); // stopped after a database rewind, until an operator resumes it
    // Never assign below what the stream already holds, whoever wrote it.
    StreamId top = streams.lastGeneratedId(o.streamKey, o.relayKey);
    if (lease.entriesAdded() > 0 || top.compareTo(StreamId.ZERO) > 0) {
      // Redis's count of what the relays added, against the database's: more than the pending batch (which a relay
      // stopped between its XADD and its mark leaves in the stream) means the database lost commits.
      RedisTransport.PublishResult counted = streams.publish(o.streamKey, o.relayKey, 0, List.of());
      rewinds.check(shard, o.streamKey, counted.entriesAdded(), lease.entriesAdded(), lease.pendingBatch(),
          "taking its lease", this::notify);
    }
    if (top.compareTo(lease.lastAssigned()) > 0) {
      leases.raiseLastAssigned(c, shard, config.owner(), lease.epoch(), top);
    }
    owned.put(shard, o);
    publishView();
    log.info("relay {} took {} with epoch {} (last assigned {}, stream top {})", config.owner(), shard,
        lease.epoch(), lease.lastAssigned(), top);
    notify(() -> listener.leaseAcquired(shard, lease.epoch()));
  }

  /** Forgets a shard whose lease another relay holds now; the relay stops writing its stream. */
  void lost(OwnedShard o, String why) {
    if (owned.remove(o.id) != null) {
      publishView();
      log.warn("relay {} lost {} (epoch {}): {}; it stops writing that stream", config.owner(), o.id, o.epoch, why);
      onLost.lost(o.id, o.epoch, why);
      notify(() -> listener.leaseLost(o.id, o.epoch, false));
    }
  }

  /** What is told of a lost lease besides the listener: the relay's health. */
  interface LostLeases {
    void lost(ShardId shard, long epoch, String why);
  }

  private volatile LostLeases onLost = (shard, epoch, why) -> {};

  void onLost(LostLeases onLost) {
    this.onLost = onLost;
  }

  private void notify(Runnable callback) {
    notifier.accept(callback);
  }
}
