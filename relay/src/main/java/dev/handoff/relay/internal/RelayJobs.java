package dev.handoff.relay.internal;

import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayCycle;
import dev.handoff.relay.RelayException;
import dev.handoff.relay.RetentionReport;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What a relay runs under its one work lock, so that the loop's cycle, {@code relayOnce()}, {@code maintainOnce()}
 * and the drain never overlap: the leases ({@link LeaseRound}), publishing ({@link ShardPublisher}), retention
 * ({@link RelayMaintenance}) and the health checks that read the database. Thread-safe through that lock.
 */
final class RelayJobs {

  private final RelayConfig config;
  private final ReentrantLock work = new ReentrantLock();
  private final ShardTable table;
  private final LeaseKeeper keeper;
  private final LeaseRound leaseRound;
  private final ShardPublisher publisher;
  private final RelayMaintenance maintenance;
  private final RelayHealth health;
  private final ConnectionSource connections;

  RelayJobs(RelayConfig config, ShardTable table, LeaseKeeper keeper, LeaseRound leaseRound,
      ShardPublisher publisher, RelayMaintenance maintenance, RelayHealth health, ConnectionSource connections) {
    this.config = config;
    this.table = table;
    this.keeper = keeper;
    this.leaseRound = leaseRound;
    this.publisher = publisher;
    this.maintenance = maintenance;
    this.health = health;
    this.connections = connections;
  }

  /**
   * One cycle of the relay's loop: the leases when due, the backlog and stranded-shard checks when due, a publishing
   * pass, and a slice of maintenance when due. Returns whether it assigned rows.
   */
  boolean cycle() throws SQLException {
    work.lock();
    try {
      leaseRound.run(false);
      health.checkBacklogIfDue(connections);
      health.stranded().checkIfDue(connections);
      boolean found = publisher.publishOwned(true).assigned() > 0;
      if (maintenance.due()) {
        maintainSlice(RelayMaintenance.SLICE_NANOS);
      }
      return found;
    } finally {
      work.unlock();
    }
  }

  /** {@code Relay.relayOnce()}: the leases now, then publishing passes until one finds nothing. */
  RelayCycle relayOnce() {
    work.lock();
    try {
      leaseRound.run(true);
      RelayCycle total = new RelayCycle(table.size(), 0, 0, 0);
      RelayCycle pass;
      do {
        leaseRound.run(false);
        pass = publisher.publishOwned(true);
        total = new RelayCycle(table.size(), total.assigned() + pass.assigned(),
            total.published() + pass.published(), total.republished() + pass.republished());
      } while (pass.assigned() + pass.published() + pass.republished() > 0);
      return total;
    } catch (SQLException e) {
      forgetProgress();
      throw new RelayException("relay pass of " + config.owner() + " failed", e);
    } catch (RuntimeException | Error e) {
      forgetProgress(); // the next pass sends again what this one wrote and did not mark
      throw e;
    } finally {
      work.unlock();
    }
  }

  /** {@code Relay.maintainOnce()}'s work under the lock: a whole maintenance run now, and the stranded check. */
  RetentionReport maintainOnce() {
    RetentionReport report;
    work.lock();
    try (Connection c = connections.get()) {
      maintenance.startNow();
      do {
        report = maintenance.slice(c, table, Long.MAX_VALUE / 2);
      } while (report == null);
      health.stranded().check(c);
    } catch (SQLException e) {
      throw new RelayException("maintenance of relay " + config.owner() + " failed", e);
    } finally {
      work.unlock();
    }
    return report;
  }

  /** After a failure nothing is known about in-flight rows: look for assigned rows again before new ones. */
  void forgetProgress() {
    work.lock();
    try {
      table.forgetHeld();
      table.resendAll();
      keeper.checkSoon();
    } finally {
      work.unlock();
    }
  }

  /**
   * Publishes every row already assigned, releases the leases and leaves; true if nothing assigned was left. A
   * failure is the next owner's to finish after the lease TTL, and drains nothing more.
   */
  boolean drain(long deadlineNanos) throws SQLException {
    work.lock();
    try (Connection c = connections.get()) {
      return leaseRound.releaseAll(c, deadlineNanos);
    } finally {
      work.unlock();
    }
  }

  /** Runs a slice of the due maintenance; a run still in progress afterwards brings the next cycle on at once. */
  private void maintainSlice(long sliceNanos) throws SQLException {
    try (Connection c = connections.get()) {
      RetentionReport done = maintenance.slice(c, table, sliceNanos);
      if (done == null && maintenance.due()) {
        publisher.moreToDo();
      }
    }
  }
}
