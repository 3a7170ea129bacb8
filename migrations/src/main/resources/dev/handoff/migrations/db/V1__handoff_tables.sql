-- handoff's tables. Names are unqualified on purpose: Flyway runs these scripts with the search_path set to
-- the target schema (default "handoff"), so the same scripts can be applied into any schema, or from an
-- application's own Flyway instance.

-- One row per message appended by a producer, in the producer's transaction.
CREATE TABLE outbox (
    id            bigint       GENERATED ALWAYS AS IDENTITY,
    message_id    uuid         NOT NULL,
    topic         varchar(100) NOT NULL,
    shard         integer      NOT NULL,
    message_key   varchar(512),
    type          varchar(200) NOT NULL,
    payload       bytea        NOT NULL,
    headers       jsonb        NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz  NOT NULL DEFAULT now(),
    -- The Redis stream entry ID (ms-seq) of the published entry; NULL until published.
    stream_ms     bigint,
    stream_seq    bigint,
    published_at  timestamptz,
    CONSTRAINT outbox_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_message_id_key UNIQUE (message_id),
    CONSTRAINT outbox_shard_check CHECK (shard >= 0),
    CONSTRAINT outbox_stream_id_check CHECK ((stream_ms IS NULL) = (stream_seq IS NULL)),
    CONSTRAINT outbox_published_check CHECK (published_at IS NULL OR stream_ms IS NOT NULL)
);

-- The relay's work queue: rows not yet published, per stream, in id order. Small when the relay keeps up.
-- It is the only secondary index on purpose: every other index would cost each row two more index insertions
-- (the relay updates a row twice), and what would use them is rare (retention walks the primary key in id order;
-- repair after Redis lost data scans one stream's rows).
CREATE INDEX outbox_unpublished_idx ON outbox (topic, shard, id) WHERE published_at IS NULL;
-- A queue table: rows change state fast, so statistics and dead index entries must not wait for 20% of the table
-- to change (the default). With statistics that still say "everything is unpublished" after a large backlog
-- arrived, the planner walks the primary key and skips every row published since, once per batch.
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);

-- One row per (topic, shard) stream: who may write it (lease with a fencing epoch) and what was assigned.
CREATE TABLE relay_lease (
    topic          varchar(100) NOT NULL,
    shard          integer      NOT NULL,
    owner          varchar(200),
    epoch          bigint       NOT NULL DEFAULT 0,
    -- The Redis key prefix this stream is written under. One schema feeds one set of streams: a relay configured
    -- with another prefix is refused, instead of taking the other streams' bookkeeping for lost data.
    key_prefix     varchar(64),
    expires_at     timestamptz  NOT NULL DEFAULT '-infinity',
    -- Highest stream ID ever assigned for this stream.
    last_ms        bigint       NOT NULL DEFAULT 0,
    last_seq       bigint       NOT NULL DEFAULT 0,
    -- The batch assigned and not yet confirmed in the stream: outbox ids in stream order, the i-th (from 0) has
    -- stream ID batch_ms-(batch_seq + i). Kept here, not on the rows, so assigning a batch writes one row.
    batch_ids      bigint[],
    batch_ms       bigint,
    batch_seq      bigint,
    -- Every consumer group had finished every entry below this ID when it was recorded (the trim point).
    watermark_ms   bigint       NOT NULL DEFAULT 0,
    watermark_seq  bigint       NOT NULL DEFAULT 0,
    -- How many entries the relays have added to the stream, as last confirmed by Redis. Redis keeps its own
    -- count beside the stream; finding it lower means Redis lost the stream (restart without persistence).
    entries_added  bigint       NOT NULL DEFAULT 0,
    updated_at     timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT relay_lease_pkey PRIMARY KEY (topic, shard)
);

-- Processed-message markers, written in the consumer's business transaction. The primary key is the fence
-- that makes redelivery, replay, reclaim and zombie consumers harmless.
CREATE TABLE inbox (
    consumer_group  varchar(200) NOT NULL,
    message_id      uuid         NOT NULL,
    stream_id       varchar(64),
    outcome         varchar(16)  NOT NULL DEFAULT 'processed',
    processed_at    timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT inbox_pkey PRIMARY KEY (consumer_group, message_id),
    CONSTRAINT inbox_outcome_check CHECK (outcome IN ('processed', 'dead'))
);

CREATE INDEX inbox_processed_at_idx ON inbox (processed_at);

-- Messages a consumer group gave up on, with the message itself so that it can be retried later.
CREATE TABLE dead_letter (
    id              bigint       GENERATED ALWAYS AS IDENTITY,
    consumer_group  varchar(200) NOT NULL,
    -- NULL when the stream entry could not be decoded at all.
    message_id      uuid,
    topic           varchar(100) NOT NULL,
    stream_key      varchar(300) NOT NULL,
    stream_id       varchar(64)  NOT NULL,
    outbox_id       bigint,
    message_key     varchar(512),
    type            varchar(200),
    headers         jsonb,
    payload         bytea,
    created_at      timestamptz,
    deliveries      integer      NOT NULL,
    error           text         NOT NULL,
    dead_at         timestamptz  NOT NULL DEFAULT now(),
    status          varchar(16)  NOT NULL DEFAULT 'dead',
    retried_at      timestamptz,
    CONSTRAINT dead_letter_pkey PRIMARY KEY (id),
    CONSTRAINT dead_letter_entry_key UNIQUE (consumer_group, stream_key, stream_id),
    CONSTRAINT dead_letter_status_check CHECK (status IN ('dead', 'retried'))
);

CREATE INDEX dead_letter_status_idx ON dead_letter (consumer_group, status);

-- Live relay processes, so that several relays can split the shards between them fairly.
CREATE TABLE relay_member (
    owner         varchar(200) NOT NULL,
    started_at    timestamptz  NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT relay_member_pkey PRIMARY KEY (owner)
);
