-- handoff: grants for the consumer role (StreamConsumer, ListConsumer): the inbox markers, dead letters, the
-- inbox purge, and reading the outbox to recover an entry Redis lost or to replay from it. It cannot append to,
-- change or delete the outbox, nor touch the relay's tables.
--
-- Run with psql:    psql -v schema=handoff -v role=consumer -f consumer.sql
-- or from Java:     HandoffGrants.apply(dataSource, HandoffGrants.Role.CONSUMER, "handoff", "consumer")
-- The role itself (CREATE ROLE ... LOGIN) is yours; these statements only grant, and granting twice is harmless.
-- The handler's own tables are yours to grant as well: the handler runs in the consumer's transaction, as this
-- role.

GRANT USAGE ON SCHEMA :"schema" TO :"role";

-- The markers: inserted per batch (ON CONFLICT DO NOTHING RETURNING message_id), read to skip duplicates, a dead
-- marker revived by a retry, removed when a batch is undone and by the inbox purge. Every column is read (the
-- purge also by the system column ctid), so SELECT is on the table.
GRANT SELECT, DELETE ON :"schema".inbox TO :"role";
GRANT INSERT (consumer_group, message_id, stream_id, outcome) ON :"schema".inbox TO :"role";
GRANT UPDATE (outcome, processed_at, stream_id) ON :"schema".inbox TO :"role";

-- A batch's transaction is sealed by a setting that the function batch_unseal clears (V10), which its migration
-- grants to PUBLIC: nothing to grant here. The batch_seal table (V4) is unused since V10.

-- Dead letters: written when a message gives up, listed, counted, and marked retried; a retry an operator requested
-- is picked up by the housekeeping, which clears the request and, when the handler fails again, records why.
GRANT SELECT ON :"schema".dead_letter TO :"role";
GRANT INSERT (consumer_group, message_id, topic, stream_key, stream_id, outbox_id, message_key, type, headers,
    payload, created_at, deliveries, error) ON :"schema".dead_letter TO :"role";
GRANT UPDATE (status, retried_at, retry_requested_at, retry_failed_at, retry_error) ON :"schema".dead_letter
    TO :"role";

-- The outbox, read only: the message of an entry Redis lost, a replay's pages (every column), the list
-- transport's backlog, and whether the outbox still holds a marker's message (the purge's rule).
GRANT SELECT ON :"schema".outbox TO :"role";
-- A replay reports how much of its range the outbox retention already deleted.
GRANT SELECT ON :"schema".outbox_purged TO :"role";

-- A topic's shard count is declared once (TopicRegistry): the first to state it records it, later ones read it.
GRANT SELECT, INSERT ON :"schema".topic TO :"role";

-- Replays an operator requested (handoff replay): the group's consumers claim one, run it, and record its outcome.
GRANT SELECT ON :"schema".replay_request TO :"role";
GRANT UPDATE (finished_at, handled, duplicates, failed) ON :"schema".replay_request TO :"role";

-- Ordered consumption (V8): the leases of the group's shards and the live members, taken, renewed, fenced and given
-- back by the consumers themselves.
GRANT SELECT, INSERT, UPDATE, DELETE ON :"schema".consumer_lease TO :"role";
GRANT SELECT, INSERT, UPDATE, DELETE ON :"schema".consumer_member TO :"role";
