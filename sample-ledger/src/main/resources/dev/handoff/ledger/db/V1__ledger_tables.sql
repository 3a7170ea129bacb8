-- The sample billing ledger's tables. Names are unqualified: Flyway runs this with the search_path set to the
-- target schema, the one that also holds handoff's tables (the charge and the inbox marker commit together).

-- One row per payment, inserted in the same transaction as its outbox message.
CREATE TABLE payment (
    payment_id    varchar(64)  NOT NULL,
    account       varchar(64)  NOT NULL,
    amount_cents  bigint       NOT NULL,
    -- A poison payment is one the ledger refuses to charge (think: a frozen account). Its message fails every
    -- delivery and ends in dead_letter; clearing the flag and retrying the dead letter charges it.
    poison        boolean      NOT NULL DEFAULT false,
    created_at    timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT payment_pkey PRIMARY KEY (payment_id),
    CONSTRAINT payment_amount_check CHECK (amount_cents > 0)
);

-- One row per charge booked by a ledger (a consumer group). On purpose there is NO unique constraint on
-- (ledger, payment_id) and no foreign key to payment: the inbox alone must keep it at one charge per payment, and
-- `verify` proves it, reporting double charges and charges without a payment instead of having the database
-- refuse them.
CREATE TABLE charge (
    id            bigint       GENERATED ALWAYS AS IDENTITY,
    ledger        varchar(200) NOT NULL,
    payment_id    varchar(64)  NOT NULL,
    message_id    uuid         NOT NULL,
    amount_cents  bigint       NOT NULL,
    charged_at    timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT charge_pkey PRIMARY KEY (id)
);

-- Counters a consumer process keeps in memory and flushes here, so that `status` in another process can show
-- them (handoff's ConsumerStatus counts duplicates per consumer instance only).
CREATE TABLE consumer_stats (
    consumer_group      varchar(200) NOT NULL,
    deliveries          bigint       NOT NULL DEFAULT 0,
    duplicates_skipped  bigint       NOT NULL DEFAULT 0,
    reclaimed           bigint       NOT NULL DEFAULT 0,
    updated_at          timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT consumer_stats_pkey PRIMARY KEY (consumer_group)
);
