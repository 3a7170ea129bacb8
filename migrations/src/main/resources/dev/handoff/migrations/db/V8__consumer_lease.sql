-- Ordered consumption (StreamConsumerBuilder.ordering(Ordering.PER_SHARD)): one consumer process owns a shard of a
-- topic for a consumer group at a time, through a lease with a fencing epoch, as relays own streams. The batch
-- transaction of the owner records its position with its epoch, so a former owner that was paused past its lease
-- cannot commit once another took the shard. One row per (group, topic, shard), created by the first consumer of
-- the group; an owner of NULL is a free shard.
CREATE TABLE consumer_lease (
    consumer_group      varchar(200) NOT NULL,
    topic               varchar(100) NOT NULL,
    shard               integer      NOT NULL,
    owner               varchar(200),
    epoch               bigint       NOT NULL DEFAULT 0,
    expires_at          timestamptz  NOT NULL DEFAULT '-infinity',
    -- The last stream entry the shard's owners committed, in order, and when.
    position            varchar(64),
    position_at         timestamptz,
    -- The message that holds the shard up: it failed, and its successors wait for it. NULL: flowing.
    blocked_stream_id   varchar(64),
    blocked_message_id  uuid,
    blocked_since       timestamptz,
    blocked_deliveries  integer,
    blocked_error       text,
    -- Set when the blocked message ran out of deliveries under ShardFailurePolicy.STOP_SHARD: the shard waits for an
    -- operator (handoff ordered resume) instead of dead-lettering it. NULL: not stopped.
    stopped_at          timestamptz,
    -- An operator's answer to a stopped shard, carried out by its owner: try the message again, or dead-letter it.
    resume_requested    varchar(8),
    CONSTRAINT consumer_lease_resume_check CHECK (resume_requested IN ('retry', 'skip')),
    CONSTRAINT consumer_lease_pkey PRIMARY KEY (consumer_group, topic, shard)
);

-- The live consumer processes of an ordered group, for an even spread of the shards: each renews its row while it
-- runs and deletes it when it stops cleanly; a row past the lease TTL counts as gone.
CREATE TABLE consumer_member (
    consumer_group  varchar(200) NOT NULL,
    topic           varchar(100) NOT NULL,
    owner           varchar(200) NOT NULL,
    heartbeat_at    timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT consumer_member_pkey PRIMARY KEY (consumer_group, topic, owner)
);
