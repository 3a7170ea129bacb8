-- Each topic's shard count, declared once. The first outbox, relay or consumer that states a count for a topic
-- records it here; every later one that states a count must state the same, and one that states none reads it.
-- A key's shard is its hash modulo this count, so two counts for one topic would put a key's messages on shards
-- that no relay or consumer of the other count serves.
CREATE TABLE topic (
    name         varchar(100) NOT NULL,
    shards       integer      NOT NULL,
    declared_at  timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT topic_pkey PRIMARY KEY (name),
    CONSTRAINT topic_shards_check CHECK (shards BETWEEN 1 AND 1024)
);
