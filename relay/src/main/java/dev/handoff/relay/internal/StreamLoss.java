package dev.handoff.relay.internal;

import dev.handoff.core.internal.StreamId;
import dev.handoff.relay.Relay;
import java.sql.Connection;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the relay does when Redis holds fewer of a shard's entries than the database confirmed: it makes the rows
 * Redis may lack unpublished again, keeping their stream IDs, for the publisher to send at once.
 *
 * <p>Two losses look alike to the counter and differ in what survived. When the counter beside the stream is gone
 * too (a restart without persistence, an eviction, a deletion), every retained row at or above the watermark goes
 * again. When the counter survived but is behind (a replica promoted after its master died, which lacked the last
 * writes because replication is asynchronous; a restart from an older snapshot), the stream is an older copy of the
 * relay's own history: it only lacks entries above its last one, so only the rows from its last entry on go again
 * (the last one is found). The rows below its first entry, which the relay trimmed after every group had finished
 * them, would be refused if sent again (their IDs are below the stream's top and the entries are gone) and taken for
 * another writer's doing; those between its first and last entry are there. Stateless; thread-safe.
 */
final class StreamLoss {

  private static final Logger log = LoggerFactory.getLogger(Relay.class);

  private final String owner;
  private final RedisTransport transport;
  private final OutboxQueries outbox;

  StreamLoss(String owner, RedisTransport transport, OutboxQueries outbox) {
    this.owner = owner;
    this.transport = transport;
    this.outbox = outbox;
  }

  /** Re-queues what {@code o}'s stream may lack, given Redis's own count; returns how many rows. */
  long requeue(Connection c, OwnedShard o, long redisCount) throws SQLException {
    StreamId floor = redisCount > 0 ? transport.survivingTop(o.streamKey, o.relayKey) : StreamId.ZERO;
    long rows = outbox.republish(c, o.id, owner, o.epoch, floor);
    if (redisCount > 0) {
      log.error("relay {}: REDIS LOST STREAM {} ENTRIES (Redis counts {} entries added by relays, the database"
              + " confirmed {}: an older copy, such as a replica promoted after its master failed before it had the"
              + " last writes). Publishing {} rows from {} again with their original IDs; consumers' inboxes absorb"
              + " what they already processed.",
          owner, o.streamKey, redisCount, o.confirmedAdded, rows, floor);
    } else {
      log.error("relay {}: REDIS LOST STREAM {} (Redis counts {} entries added by relays, the database confirmed {};"
              + " restarted without persistence, evicted or deleted?). Publishing {} retained rows again with their"
              + " original IDs; consumers' inboxes absorb what they already processed.",
          owner, o.streamKey, redisCount, o.confirmedAdded, rows);
    }
    return rows;
  }
}
