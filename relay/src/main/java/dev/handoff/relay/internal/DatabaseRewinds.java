package dev.handoff.relay.internal;

import dev.handoff.core.ShardId;
import dev.handoff.core.internal.Shards;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayConfig;
import dev.handoff.relay.RelayListener;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A database that went back in time: a stream holds more entries that the relays added than the database records
 * (beyond a pending batch the stream may already hold). Nothing but a lost commit explains it, typically a failover to
 * an asynchronous standby that had not received the last commits: the stream keeps the entries of commits the
 * database no longer has (ghosts), and the consumers may have acknowledged messages whose effects the database lost.
 * The relay cannot undo that; it says so, at ERROR, in its health ({@code database-rewound}, DEGRADED, until the
 * relay restarts) and to its listener, and goes on publishing above the stream's top.
 *
 * <p>Thread-safe: the finding is volatile.
 */
final class DatabaseRewinds {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final RelayConfig config;
  private final RelayListener listener;
  private volatile String finding;
  /** Shards to stop publishing ({@code pauseOnDatabaseRewind}), with why: written by the next cycle. */
  private final Map<ShardId, String> toPause = new ConcurrentHashMap<>();

  DatabaseRewinds(RelayConfig config, RelayCollaborators collaborators) {
    this.config = config;
    this.listener = collaborators.listener();
  }

  /** The shards this relay holds whose publishing is paused, as its last cycle saw them. */
  private volatile Set<ShardId> paused = Set.of();

  /** Records the owned shards whose publishing is paused, for health. */
  void pausedNow(Set<ShardId> shards) {
    this.paused = Set.copyOf(shards);
  }

  /** The owned shards whose publishing is paused, in order. */
  SortedSet<ShardId> paused() {
    return new TreeSet<>(paused);
  }

  /** Whether a rewind found on {@code shard} asks to stop publishing it, not yet taken. */
  boolean pauseRequested(ShardId shard) {
    return toPause.containsKey(shard);
  }

  /** Takes the shards to stop publishing, found since the last call, with why. */
  Map<ShardId, String> takePausesRequested() {
    if (toPause.isEmpty()) {
      return Map.of(); // every cycle asks: nothing to allocate in the usual case
    }
    Map<ShardId, String> out = new HashMap<>();
    for (ShardId shard : toPause.keySet()) {
      String why = toPause.remove(shard);
      if (why != null) {
        out.put(shard, why);
      }
    }
    return out;
  }

  /** The last rewind found, as the health reason's text, or null. */
  String finding() {
    return finding;
  }

  /**
   * Compares Redis's count of the entries the relays added to a stream with the database's, and reports a rewind when
   * Redis holds more than {@code allowance} entries the database does not count.
   *
   * @param when what the relay was doing ("taking its lease", "publishing")
   * @return whether a rewind was found
   */
  boolean check(ShardId shard, String streamKey, long redisAdded, long databaseAdded, long allowance, String when,
      Consumer<Runnable> notifier) {
    long unknown = redisAdded - databaseAdded;
    if (unknown <= allowance) {
      return false;
    }
    String detail = "stream " + streamKey + " holds " + unknown + " entries that the relays added and the database"
        + " does not record (Redis counts " + redisAdded + " added, the database " + databaseAdded + "), found while "
        + when + ": the database went back in time, as after a failover to a standby that had not received the last"
        + " commits. The stream may hold messages of commits the database lost, and the consumers may have"
        + " acknowledged messages whose effects it lost; the relay goes on above the stream's top. What to check and"
        + " replay: docs/guarantees.md#a-database-failover";
    log.error("relay {}: {}{}", config.owner(), detail, config.checks().pauseOnDatabaseRewind()
        ? " Publishing of " + shard + " stops until an operator runs handoff resume --topic " + shard.topic() + "."
        : "");
    finding = detail;
    if (config.checks().pauseOnDatabaseRewind()) {
      toPause.put(shard, detail);
    }
    notifier.accept(() -> listener.databaseRewound(shard, unknown, detail));
    return true;
  }
}
