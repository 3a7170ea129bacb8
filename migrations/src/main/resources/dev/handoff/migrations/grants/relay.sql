-- handoff: grants for the relay role (Relay, handoff.jar relay): publishes outbox rows, holds the leases, purges
-- published rows past the outbox retention. It cannot append, nor read or write the consumers' tables.
--
-- Run with psql:    psql -v schema=handoff -v role=relay -f relay.sql
-- or from Java:     HandoffGrants.apply(dataSource, HandoffGrants.Role.RELAY, "handoff", "relay")
-- The role itself (CREATE ROLE ... LOGIN) is yours; these statements only grant, and granting twice is harmless.
-- LISTEN, pg_notify and the advisory locks of the wake-up need no grant.

GRANT USAGE ON SCHEMA :"schema" TO :"role";

-- Reads whole rows to publish them (the assignment selects every column), and ids, topics and times to purge.
GRANT SELECT ON :"schema".outbox TO :"role";
-- Records each row's stream ID and publication (and, after Redis lost a stream, unpublishes rows again).
GRANT UPDATE (stream_ms, stream_seq, published_at) ON :"schema".outbox TO :"role";
-- The outbox retention deletes published rows past it ...
GRANT DELETE ON :"schema".outbox TO :"role";
-- ... and logs what it deleted in the same statement (RETURNING rows).
GRANT INSERT (topic, first_id, last_id, first_created_at, last_created_at, rows) ON :"schema".outbox_purged
    TO :"role";
GRANT SELECT (rows) ON :"schema".outbox_purged TO :"role";

-- One lease row per stream: created once, then taken, renewed, released and advanced; never deleted.
GRANT SELECT ON :"schema".relay_lease TO :"role";
GRANT INSERT (topic, shard, key_prefix) ON :"schema".relay_lease TO :"role";
GRANT UPDATE (owner, epoch, expires_at, last_ms, last_seq, batch_ids, batch_ms, batch_seq, watermark_ms,
    watermark_seq, entries_added, updated_at, paused_at, paused_reason) ON :"schema".relay_lease TO :"role";

-- Live relays, to split the shards: each heartbeats its row (INSERT ... ON CONFLICT (owner) DO UPDATE), forgets
-- long-dead ones and removes its own when it stops.
GRANT SELECT (owner, heartbeat_at) ON :"schema".relay_member TO :"role";
GRANT INSERT (owner) ON :"schema".relay_member TO :"role";
GRANT UPDATE (heartbeat_at) ON :"schema".relay_member TO :"role";
GRANT DELETE ON :"schema".relay_member TO :"role";

-- A topic's shard count is declared once (TopicRegistry): the first to state it records it, later ones read it.
GRANT SELECT, INSERT ON :"schema".topic TO :"role";
