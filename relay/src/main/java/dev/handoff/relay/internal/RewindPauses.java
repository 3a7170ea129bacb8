package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pause after a database rewind ({@code pauseOnDatabaseRewind}): at the start of each cycle, records in the
 * lease row of each shard where a rewind was just found that its publishing stops, and looks whether an operator
 * cleared the pause of a paused shard ({@code handoff resume}). The pause lives in the database, so that every relay
 * that takes the lease stops too. Used under the relay's work lock.
 */
final class RewindPauses {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final LeaseQueries leases;
  private final DatabaseRewinds rewinds;

  RewindPauses(RelayConfig config, LeaseQueries leases, DatabaseRewinds rewinds) {
    this.config = config;
    this.leases = leases;
    this.rewinds = rewinds;
  }

  /** Whether a rewind just found on {@code shard} asks to stop it, before the next {@link #sync} records it. */
  boolean requested(ShardId shard) {
    return rewinds.pauseRequested(shard);
  }

  /**
   * Records the pauses asked since the last call and looks whether an operator cleared those already recorded: once
   * at the start of each cycle. No database call while no shard is or should be paused.
   */
  void sync(Connection c, ShardTable owned) throws SQLException {
    applyRequested(c, owned);
    Set<ShardId> stillPaused = new HashSet<>();
    for (OwnedShard o : pausedOf(owned.shards())) {
      if (leases.paused(c, o.id)) {
        stillPaused.add(o.id);
      } else {
        o.paused = false;
        log.info("relay {}: publishing of {} resumes: an operator cleared its pause after the database rewind",
            config.owner(), o.id);
      }
    }
    rewinds.pausedNow(stillPaused);
  }

  /**
   * Records the pauses asked since the last call, without looking for cleared ones: within a cycle, right after the
   * marks that may have found a rewind, so that the shard's new batch does not go out.
   */
  void applyRequested(Connection c, ShardTable owned) throws SQLException {
    for (Map.Entry<ShardId, String> pause : rewinds.takePausesRequested().entrySet()) {
      OwnedShard o = owned.get(pause.getKey());
      if (o != null) {
        leases.pause(c, o.id, config.owner(), o.epoch, pause.getValue());
        o.paused = true;
      }
    }
  }

  private static Collection<OwnedShard> pausedOf(Collection<OwnedShard> owned) {
    return owned.stream().filter(o -> o.paused).toList();
  }
}
