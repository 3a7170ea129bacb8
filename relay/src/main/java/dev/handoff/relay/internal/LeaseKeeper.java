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
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's lease decisions: one writer per stream through the fenced leases of {@code relay_lease}. Every third
 * of the TTL a {@link LeaseRound} asks it for a {@link Plan} (how many relays live, this relay's fair share, the
 * shards above it to give back), carries out the re-sends a release needs, and has it give shards back and take free
 * or expired ones. It never calls the publisher: what a decision needs of Redis beyond a takeover's own checks is
 * the round's. A started relay's {@link LeaseRenewer} renews the leases on its own thread; otherwise
 * ({@code relayOnce}) the plan renews them. Used under the relay's work lock.
 */
final class LeaseKeeper {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  /**
   * What a lease check decided.
   *
   * @param live the relays alive now, this one included
   * @param target this relay's fair share of the shards
   * @param surplus the owned shards above that share, last taken first: each to be given back once it sent what is
   *     assigned to it
   */
  record Plan(int live, int target, List<OwnedShard> surplus) {}

  private final RelayConfig config;
  private final RelayListener listener;
  private final LeaseQueries leases;
  private final RedisTransport streams;
  private final List<ShardId> allShards;
  private final ShardTable table;
  private final LeaseRenewer renewer;
  private final Consumer<Runnable> notifier;
  private final DatabaseRewinds rewinds;
  private boolean rowsEnsured;
  private long nextLeaseCheckNanos;

  LeaseKeeper(RelayConfig config, RelayCollaborators collaborators, LeaseQueries leases, RedisTransport streams,
      ShardTable table, LeaseRenewer renewer, Consumer<Runnable> notifier, DatabaseRewinds rewinds) {
    this.rewinds = rewinds;
    this.config = config;
    this.listener = collaborators.listener();
    this.leases = leases;
    this.streams = streams;
    this.allShards = config.shards();
    this.table = table;
    this.renewer = renewer;
    this.notifier = notifier;
  }

  /** Makes the next check due whatever the schedule (after a failure). */
  void checkSoon() {
    nextLeaseCheckNanos = 0;
  }

  /** When the next lease check is due, in {@link System#nanoTime()} terms. */
  long nextCheckNanos() {
    return nextLeaseCheckNanos;
  }

  /** Whether a check is due ({@code force}: it is); when it is, the next one is scheduled a third of the TTL on. */
  boolean due(boolean force) {
    long now = System.nanoTime();
    if (!force && now < nextLeaseCheckNanos) {
      return false;
    }
    nextLeaseCheckNanos = now + config.leases().ttl().toNanos() / 3;
    return true;
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
   * The check's decision. The first one creates the lease rows (after checking the key prefix and the topics' shard
   * counts); it renews the leases unless the {@link LeaseRenewer} does, on its own thread (the first check renews
   * here too, so that this relay counts itself among the live ones from the start).
   */
  Plan plan(Connection c) throws SQLException {
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
    List<OwnedShard> mine = table.shards();
    List<OwnedShard> surplus = new ArrayList<>();
    for (int i = mine.size() - 1; i >= target; i--) {
      surplus.add(mine.get(i));
    }
    return new Plan(live, target, surplus);
  }

  /** Gives a shard back to rebalance across {@code live} relays, if it is still owned. */
  void giveBack(Connection c, OwnedShard o, int live) throws SQLException {
    if (table.giveBack(o)) {
      leases.release(c, o.id, config.owner(), o.epoch);
      log.info("relay {} released {} (epoch {}) to rebalance across {} relays", config.owner(), o.id, o.epoch, live);
      notify(() -> listener.leaseLost(o.id, o.epoch, true));
    }
  }

  /** Gives a shard back for a clean stop, if it is still owned. */
  void release(Connection c, OwnedShard o) throws SQLException {
    if (table.giveBack(o)) {
      leases.release(c, o.id, config.owner(), o.epoch);
      notify(() -> listener.leaseLost(o.id, o.epoch, true));
    }
  }

  /** Leaves the relays' membership, after giving every shard back: peers count one relay fewer at once. */
  void leave(Connection c) throws SQLException {
    table.clear();
    leases.leave(c, config.owner());
  }

  /** Takes free or expired shards up to {@code target}. */
  void takeFree(Connection c, int target) throws SQLException {
    // Start the search at an offset of our own, so that relays starting together do not chase the same shards.
    int offset = Math.floorMod(config.owner().hashCode(), Math.max(1, allShards.size()));
    for (int i = 0; i < allShards.size() && table.size() < target; i++) {
      ShardId shard = allShards.get((offset + i) % allShards.size());
      if (table.holds(shard)) {
        continue;
      }
      LeaseQueries.Lease lease = leases.acquire(c, shard, config.owner(), config.leases().ttl());
      if (lease != null) {
        takeOver(c, shard, lease);
      }
    }
  }

  /** Forgets the shards whose lease renewal found another relay holding them (with the epoch this relay had). */
  void dropLost() {
    for (LeaseRenewer.Lost l : renewer.takeLost()) {
      OwnedShard o = table.get(l.shard());
      if (o != null && o.epoch == l.epoch()) {
        table.lose(o, "its renewal found another relay holding it");
      }
    }
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
    table.take(o);
    log.info("relay {} took {} with epoch {} (last assigned {}, stream top {})", config.owner(), shard,
        lease.epoch(), lease.lastAssigned(), top);
    notify(() -> listener.leaseAcquired(shard, lease.epoch()));
  }

  private void notify(Runnable callback) {
    notifier.accept(callback);
  }
}
