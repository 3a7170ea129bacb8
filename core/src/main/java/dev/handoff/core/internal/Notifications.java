package dev.handoff.core.internal;

import dev.handoff.core.ShardId;

/**
 * How appends wake a relay that sleeps, without a NOTIFY in every appending transaction.
 *
 * <p>A transaction that queued a NOTIFY takes a lock on database 0 in its commit and holds it through the WAL flush,
 * so that notifications enter the queue in commit order: every notifying transaction of the server commits one at a
 * time. Appends therefore notify only while a relay sleeps on their shard. A relay that goes to sleep takes a
 * session advisory lock per owned shard, exclusive, on its LISTEN connection; every append tries the same key
 * shared for its transaction ({@code pg_try_advisory_xact_lock_shared}), which is not an MVCC read and costs no
 * write. When the try fails the relay sleeps, and the append notifies. When it succeeds the append holds the key
 * until it commits, so the relay cannot lock it before that commit, and the relay looks for rows after it locked
 * every key: a row is either seen by the relay's last look or announced. The LISTEN session's locks go with it when
 * its connection dies. The channel is one per schema and the payload is the topic.
 */
public final class Notifications {

  private Notifications() {}

  public static String channel(String schema) {
    return "handoff_" + schema;
  }

  /**
   * The first key of a shard's wake lock (the second is the shard number): a stable hash of the schema and the
   * topic. {@link String#hashCode()} is fixed by the language, so every process computes the same key. An
   * application's own advisory lock that collides with it costs at most a needless notification or a relay that
   * polls instead of sleeping; it never hides a row.
   */
  public static int lockKey(String schema, String topic) {
    return ("handoff:" + schema + ":" + topic).hashCode();
  }

  public static int lockKey(String schema, ShardId shard) {
    return lockKey(schema, shard.topic());
  }
}
