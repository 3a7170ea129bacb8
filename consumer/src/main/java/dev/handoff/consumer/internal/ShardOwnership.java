package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ordering.Ordering;
import dev.handoff.core.StreamFormat;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;

/**
 * The shards of an ordered group this consumer holds, and the upkeep of their leases ({@code consumer_lease}), as a
 * relay holds its streams: every third of the lease TTL it beats as a member of the group, renews its leases
 * (forgetting those another consumer holds now), gives back what is above its fair share of the shards among the
 * live members, and takes free or expired shards up to that share. A shard is given back only between two of its
 * batches, under its {@link OwnedShard#lock}.
 *
 * <p>Thread-safe: the shards are a concurrent map, and the upkeep runs under this object's lock.
 */
final class ShardOwnership {

  private final ConsumerConfig config;
  private final DataSource dataSource;
  private final ShardLeases leases;
  private final String owner;
  private final Duration ttl;
  private final Logger log;
  private final ConcurrentSkipListMap<Integer, OwnedShard> owned = new ConcurrentSkipListMap<>();
  private boolean rowsEnsured;

  ShardOwnership(ConsumerConfig config, DataSource dataSource, Logger log) {
    this.config = config;
    this.dataSource = dataSource;
    this.leases = new ShardLeases(config.schema(), config.group(), config.topic().name());
    this.owner = config.consumerName();
    Ordering ordering = config.streamSettings().ordering();
    this.ttl = ordering.leaseTtl();
    this.log = log;
  }

  ShardLeases leases() {
    return leases;
  }

  /** This consumer's name in the lease rows. */
  String owner() {
    return owner;
  }

  /** How often {@link #maintain} runs: a third of the lease TTL. */
  Duration interval() {
    return ttl.dividedBy(3);
  }

  /** The shards held now, in shard order. */
  List<OwnedShard> held() {
    return new ArrayList<>(owned.values());
  }

  /** Of the shards held, those worker {@code worker} of {@code workers} works on: every {@code workers}-th. */
  List<OwnedShard> assignedTo(int worker, int workers) {
    List<OwnedShard> all = held();
    List<OwnedShard> mine = new ArrayList<>();
    for (int i = worker; i < all.size(); i += workers) {
      mine.add(all.get(i));
    }
    return mine;
  }

  /**
   * The held shards as lanes for requested dead-letter retries: each runs its stream's requests under the shard's
   * lock (between two of its batches) and lease.
   */
  List<GroupUpkeep.RetryLane> lanes() {
    List<GroupUpkeep.RetryLane> out = new ArrayList<>();
    for (OwnedShard s : held()) {
      out.add(deadLetters -> {
        s.lock.lock();
        try {
          if (s.released) {
            return DeadLetterService.Requested.NONE;
          }
          return deadLetters.runNextRequested(s.streamKey,
              (c, position) -> leases.fence(c, s.shard, owner, s.epoch, position));
        } finally {
          s.lock.unlock();
        }
      });
    }
    return out;
  }

  /**
   * One round of upkeep: beat, renew, give back above the fair share, take free shards up to it.
   *
   * @throws SQLException when the database fails; the next round tries again, and leases not renewed meanwhile
   *     expire, which stops their batches from committing
   */
  synchronized void maintain() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      if (!rowsEnsured) {
        leases.ensureRows(c, config.topic().shards());
        rowsEnsured = true;
      }
      leases.heartbeat(c, owner);
      Map<Integer, Long> epochs = new HashMap<>();
      owned.forEach((shard, s) -> epochs.put(shard, s.epoch));
      for (int shard : leases.renew(c, owner, epochs, ttl)) {
        lose(shard, "its renewal found another consumer holding it");
      }
      int shards = config.topic().shards();
      int live = leases.liveMembers(c, ttl);
      int target = (shards + live - 1) / live;
      List<OwnedShard> mine = held();
      for (int i = mine.size() - 1; i >= 0 && owned.size() > target; i--) {
        giveBack(c, mine.get(i), "to rebalance across " + live + " consumers");
      }
      int offset = Math.floorMod(owner.hashCode(), shards);
      for (int i = 0; i < shards && owned.size() < target; i++) {
        int shard = (offset + i) % shards;
        if (owned.containsKey(shard)) {
          continue;
        }
        ShardLeases.Taken taken = leases.acquire(c, shard, owner, ttl);
        if (taken != null) {
          owned.put(shard, new OwnedShard(shard, StreamFormat.streamKey(config.keyPrefix(), config.topic().name(),
              shard), taken.epoch(), taken.stopped()));
          log.info("Consumer group '{}': {} took shard {} of '{}' (epoch {}{})", config.group(), owner, shard,
              config.topic().name(), taken.epoch(), taken.stopped() ? ", stopped for an operator" : "");
        }
      }
    }
  }

  /**
   * Forgets a shard whose lease another consumer holds now: its worker stops at its next look, and a batch it has
   * in flight cannot commit (the fence finds another epoch).
   */
  void lose(int shard, String why) {
    OwnedShard s = owned.remove(shard);
    if (s != null) {
      s.released = true;
      log.warn("Consumer group '{}': {} lost shard {} of '{}' (epoch {}): {}", config.group(), owner, shard,
          config.topic().name(), s.epoch, why);
    }
  }

  /** Gives every shard back and leaves the members, after the workers stopped: a clean close. */
  synchronized void releaseAll() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      for (OwnedShard s : held()) {
        giveBack(c, s, "on close");
      }
      leases.leave(c, owner);
    }
  }

  /** Gives a shard back once no worker is in one of its batches; left for the next round if one stays in. */
  private void giveBack(Connection c, OwnedShard s, String why) throws SQLException {
    try {
      if (!s.lock.tryLock(interval().toMillis() / 4, TimeUnit.MILLISECONDS)) {
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    try {
      s.released = true;
      owned.remove(s.shard, s);
      leases.release(c, s.shard, owner, s.epoch);
      log.info("Consumer group '{}': {} gave back shard {} of '{}' (epoch {}) {}", config.group(), owner, s.shard,
          config.topic().name(), s.epoch, why);
    } finally {
      s.lock.unlock();
    }
  }
}
