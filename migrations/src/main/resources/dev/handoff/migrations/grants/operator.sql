-- handoff: grants for the operator role: reading the status (outbox depth, leases, consumer groups), listing,
-- retrying, requesting retries of and purging dead letters, and purging inbox markers. It cannot append, publish
-- or consume.
--
-- Run with psql:    psql -v schema=handoff -v role=ops -f operator.sql
-- or from Java:     HandoffGrants.apply(dataSource, HandoffGrants.Role.OPERATOR, "handoff", "ops")
-- The role itself (CREATE ROLE ... LOGIN) is yours; these statements only grant, and granting twice is harmless.
-- A dead-letter retry run by this role (HandoffConsumer.retry) runs the consumer's handler in its transaction, as
-- this role: grant it the handler's tables too, or request the retry instead (DeadLetterAdmin.requestRetry,
-- `handoff dlq retry`), which the running consumers run as the consumer role.

GRANT USAGE ON SCHEMA :"schema" TO :"role";

-- Status: per shard the unpublished rows and the oldest of them, the purge lag (ids and publication times), the
-- list transport's backlog; and whether the outbox still holds a marker's message (the inbox purge's rule). No
-- payload, key or header.
GRANT SELECT (id, message_id, topic, shard, created_at, published_at) ON :"schema".outbox TO :"role";
-- The failover report: whether a stream entry's message has an outbox row (the columns above) or a purge of the
-- outbox accounts for it (bounds and counts, no message).
GRANT SELECT ON :"schema".outbox_purged TO :"role";
-- Status: which topics and shards exist (for this key prefix), who holds each lease, at which epoch, and whether it
-- is live.
GRANT SELECT (topic, shard, owner, epoch, key_prefix, expires_at, paused_at, paused_reason) ON :"schema".relay_lease
    TO :"role";
-- handoff resume: lets the relays publish a shard again that they stopped after the database went back in time.
GRANT UPDATE (paused_at, paused_reason) ON :"schema".relay_lease TO :"role";

-- Dead letters: listed and counted, locked and marked retried by a retry; a retry requested for the running
-- consumers to run (DeadLetterAdmin, `handoff dlq retry`: retry_requested_at only, the consumer role records the
-- outcome); and purged (`handoff dlq purge`: the rows only, the inbox markers stay).
GRANT SELECT, DELETE ON :"schema".dead_letter TO :"role";
GRANT UPDATE (status, retried_at, retry_requested_at) ON :"schema".dead_letter TO :"role";

-- A retry is fenced by the inbox marker like a delivery (revive the dead marker, or insert one); the purge reads
-- every column (and the system column ctid) and deletes markers.
GRANT SELECT, DELETE ON :"schema".inbox TO :"role";
GRANT INSERT (consumer_group, message_id, stream_id, outcome) ON :"schema".inbox TO :"role";
GRANT UPDATE (outcome, processed_at, stream_id) ON :"schema".inbox TO :"role";
-- The retry's handler runs in a sealed transaction, as a delivery's does: batch_unseal (V10) is PUBLIC's to call.

-- status and the other commands read each topic's declared shard count.
GRANT SELECT ON :"schema".topic TO :"role";

-- handoff replay: requests a replay of a range of the outbox through a group's running consumers, and reads it back.
GRANT SELECT ON :"schema".replay_request TO :"role";
GRANT INSERT (consumer_group, topic, appended_from, appended_to) ON :"schema".replay_request TO :"role";

-- Ordered consumption (V8): handoff status shows each shard's owner, epoch, position and blocking message; handoff
-- ordered resume asks a stopped shard's owner to try its message again or to dead-letter it.
GRANT SELECT ON :"schema".consumer_lease TO :"role";
GRANT SELECT ON :"schema".consumer_member TO :"role";
GRANT UPDATE (resume_requested) ON :"schema".consumer_lease TO :"role";
