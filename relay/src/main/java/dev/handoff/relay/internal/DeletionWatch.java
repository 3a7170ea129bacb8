package dev.handoff.relay.internal;

import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import dev.handoff.relay.RepairReport.ShardRepair;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The relay maintenance's check for entries deleted from an owned stream, the same check as {@code StreamRepair}'s,
 * run only where something may be missing. Its trigger is O(1): XINFO STREAM's {@code max-deleted-entry-id}, which
 * XDEL raises to the highest ID it ever deleted and XTRIM leaves alone (see {@code DeletedEntryIdProbeTest}). The
 * full check runs on a shard when that ID changed since the relay last looked and is at or above the relay's own
 * trim point (a deletion below it took only what every group had finished). So it runs once per new deletion; after
 * a takeover, once for a deletion older than the lease. An XTRIM by hand, or an XDEL of an ID below an earlier
 * deletion's, leaves the value as it was and is not noticed here: {@code handoff repair} finds those. The full check
 * reads the shard's retained rows in one go, under the relay's work lock: it is rare by construction.
 *
 * <p>Used under the relay's work lock; not thread-safe.
 */
final class DeletionWatch {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final RelayListener listener;
  private final EntryRepairer repairer;
  private final Consumer<Runnable> notify;

  DeletionWatch(RelayConfig config, RelayCollaborators collaborators, UnifiedJedis redis,
      Consumer<Runnable> notify) {
    this.config = config;
    this.listener = collaborators.listener();
    this.repairer = new EntryRepairer(redis, config.schema());
    this.notify = notify;
  }

  /**
   * Repairs the shard if something above its trim point was deleted since the last look; else null, and no SQL. A
   * repair that found anything reset rows to be published again: its caller has the shard resend.
   */
  ShardRepair check(Connection c, OwnedShard o, StreamId noGroupFloor) throws SQLException {
    StreamId deleted = repairer.maxDeleted(o.streamKey);
    if (deleted == null || deleted.equals(o.seenMaxDeleted)) {
      return null;
    }
    o.seenMaxDeleted = deleted;
    if (deleted.equals(StreamId.ZERO) || deleted.compareTo(o.trimPoint) < 0) {
      return null;
    }
    ShardRepair repair = repairer.repair(c, o.id, o.streamKey, noGroupFloor, false, line -> log.info("{}", line));
    if (repair.foundAnything()) {
      log.warn("relay {}: entries still needed were deleted from stream {} (max deleted ID {}): {} rows reset to be"
              + " published again with new IDs, {} gone pending entries acknowledged, {} unrecoverable (their rows"
              + " were purged){}", config.owner(), o.streamKey, deleted, repair.rowsReset().size(),
          repair.acknowledgedCount(), repair.unrecoverable().size(),
          repair.unrecoverable().isEmpty() ? "" : ": " + repair.unrecoverable());
      notify.accept(() -> listener.entriesDeleted(o.id, repair));
    }
    return repair;
  }
}
