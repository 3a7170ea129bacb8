-- An operator's request to replay a range of the outbox through a consumer group (handoff replay): the group's
-- running consumers pick it up, as they do requested dead-letter retries, and run it through their handler with the
-- inbox as the fence, writing nothing to Redis. A request is run by one consumer at a time (a row lock while it
-- runs); one whose consumer died stays open and is run again, which the inbox makes harmless.
CREATE TABLE replay_request (
    id              bigint       GENERATED ALWAYS AS IDENTITY,
    consumer_group  varchar(200) NOT NULL,
    topic           varchar(100) NOT NULL,
    appended_from   timestamptz  NOT NULL,
    appended_to     timestamptz,
    requested_at    timestamptz  NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    handled         bigint,
    duplicates      bigint,
    failed          bigint,
    CONSTRAINT replay_request_pkey PRIMARY KEY (id)
);

CREATE INDEX replay_request_open_idx ON replay_request (consumer_group, topic, id) WHERE finished_at IS NULL;
