package dev.handoff.relay.internal;

import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The Redis failures of single shards within one cycle. On a Redis Cluster a shard's node can fail alone (its slot
 * migrating, its master down until a replica takes over): that shard keeps what it has assigned for the next cycle
 * ({@link ShardTable#resend}), while the shards on healthy nodes are still written and marked. The cycle then fails
 * with the first failure, so the relay reports it and backs off as before. One per cycle; not thread-safe.
 */
final class ShardFailures {

  /** A step of one shard that talks to Redis, and perhaps to the database. */
  @FunctionalInterface
  interface Step<T> {
    T run() throws SQLException;
  }

  private final ShardTable table;
  private final Set<OwnedShard> failed = new HashSet<>();
  private JedisException first;

  /**
   * Runs {@code step}; on a Redis failure, records it, marks the shard to send its assigned rows again, and returns
   * null.
   */
  ShardFailures(ShardTable table) {
    this.table = table;
  }

  <T> T attempt(OwnedShard o, Step<T> step) throws SQLException {
    if (failed.contains(o)) {
      return null; // its node failed once in this cycle: not again before the backoff
    }
    try {
      return step.run();
    } catch (JedisException e) {
      table.resend(o);
      failed.add(o);
      if (first == null) {
        first = e;
      } else {
        first.addSuppressed(e);
      }
      return null;
    }
  }

  /** How many shards failed. */
  int count() {
    return failed.size();
  }

  /** The first failure, or null. */
  JedisException first() {
    return first;
  }

  /** Whether a shard failed because Redis is full (at maxmemory, refusing writes). */
  boolean outOfMemory() {
    return first != null && RedisMemory.isOutOfMemory(first);
  }

  /** Whether a step of {@code o} failed in this cycle. */
  boolean failed(OwnedShard o) {
    return failed.contains(o);
  }

  /** Fails the cycle with the first Redis failure, once every healthy shard has had its turn. */
  void rethrow() {
    if (first != null) {
      throw first;
    }
  }
}
