-- What the outbox retention deleted, one row per purge statement (a bounded batch), written by the statement that
-- deletes. A replay from the outbox reads it to say how many rows of its range are gone, instead of passing a
-- purged range off as "nothing to do". The rows carry no message, only bounds and a count, so this log is about a
-- thousandth of the rows it accounts for.
CREATE TABLE outbox_purged (
    id                bigint       GENERATED ALWAYS AS IDENTITY,
    topic             varchar(100) NOT NULL,
    first_id          bigint       NOT NULL,
    last_id           bigint       NOT NULL,
    first_created_at  timestamptz  NOT NULL,
    last_created_at   timestamptz  NOT NULL,
    rows              bigint       NOT NULL,
    purged_at         timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT outbox_purged_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_purged_bounds_check CHECK (first_id <= last_id AND rows > 0)
);

CREATE INDEX outbox_purged_topic_idx ON outbox_purged (topic, first_id);
