package dev.handoff.relay.internal;

import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries out the {@link LeaseKeeper}'s decisions with the {@link ShardPublisher}'s help: a lease check (the owned
 * streams checked for loss, shards above the fair share given back once they sent what is assigned to them, free
 * ones taken), and the clean stop that gives every shard back. Both read the shards settled: a loss check or a
 * release must see the held batches marked, as an immediate mark leaves them. Used under the relay's work lock.
 */
final class LeaseRound {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final ShardTable table;
  private final LeaseKeeper keeper;
  private final ShardPublisher publisher;
  private final LeaseRenewer renewer;
  private final ConnectionSource connections;

  LeaseRound(RelayConfig config, ShardTable table, LeaseKeeper keeper, ShardPublisher publisher,
      LeaseRenewer renewer, ConnectionSource connections) {
    this.config = config;
    this.table = table;
    this.keeper = keeper;
    this.publisher = publisher;
    this.renewer = renewer;
    this.connections = connections;
  }

  /**
   * Gives up the shards whose renewal found another owner; then, when due ({@code force}: now), renews (unless the
   * {@link LeaseRenewer} does), checks owned streams for loss, gives shards above the fair share back and takes free
   * or expired ones.
   */
  void run(boolean force) throws SQLException {
    keeper.dropLost();
    if (!keeper.due(force)) {
      return;
    }
    try (Connection c = connections.get()) {
      table.flush(c);
      LeaseKeeper.Plan plan = keeper.plan(c);
      probeForLoss(c, table.shards());
      for (OwnedShard o : plan.surplus()) {
        // What cannot go now (a full list) keeps its IDs for the next owner: never hold the shard to wait for it.
        publisher.sendAssigned(c, o, System.nanoTime() + config.leases().ttl().toNanos() / 3);
        keeper.giveBack(c, o, plan.live());
      }
      keeper.takeFree(c, plan.target());
    }
  }

  /**
   * Gives every owned shard back, each once it sent what is assigned to it (until the deadline), and leaves the
   * membership, so that a peer takes the shards at once instead of after the TTL. Returns whether nothing was left.
   */
  boolean releaseAll(Connection c, long deadlineNanos) throws SQLException {
    boolean drained = true;
    for (OwnedShard o : table.settled(c)) {
      renewer.checkIn();
      drained &= publisher.sendAssigned(c, o, deadlineNanos);
      keeper.release(c, o);
    }
    keeper.leave(c);
    return drained;
  }

  /**
   * Checks every owned stream for data loss. All failing is Redis down: the check fails, as it always did. Some
   * failing is one cluster node down or a slot moving: the lease work goes on (a failed cycle brings the next check
   * on at once, so failing here would stop every shard), and the publish cycle reports the failure when it writes
   * to that shard.
   */
  private void probeForLoss(Connection c, List<OwnedShard> shards) throws SQLException {
    ShardFailures probes = new ShardFailures(table);
    for (OwnedShard o : shards) {
      probes.attempt(o, () -> {
        publisher.probe(c, o);
        return o;
      });
    }
    if (probes.count() > 0 && probes.count() >= shards.size()) {
      probes.rethrow();
    } else if (probes.count() > 0) {
      log.warn("relay {}: the loss check of {} shard(s) failed, checked again at the next lease check: {}",
          config.owner(), probes.count(), probes.first().toString());
    }
  }
}
