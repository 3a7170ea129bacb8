-- The seal on a consumer batch's transaction. A batch inserts one row before its first handler runs, and handoff
-- deletes it just before its own COMMIT. Any other commit of that transaction (a handler that ran COMMIT as SQL,
-- or called commit() on the connection under the one it was given) finds the row still there: the deferred
-- trigger below raises, and PostgreSQL rolls the whole transaction back, inbox markers and effects together, so
-- that no message is marked processed by a commit handoff did not make. The table is empty whenever no batch is in
-- flight, and no other transaction ever sees a row; unlogged, because a crash can only lose rows that a rollback
-- would have removed anyway.
CREATE UNLOGGED TABLE batch_seal (
    token uuid NOT NULL,
    CONSTRAINT batch_seal_pkey PRIMARY KEY (token)
);

-- Dynamic SQL, so that the check finds the table in whatever schema handoff was installed, whatever the search_path
-- of the committing session.
CREATE FUNCTION batch_seal_still_in_place() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    present boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE token = $1)', TG_TABLE_SCHEMA, TG_TABLE_NAME)
        INTO present USING NEW.token;
    IF present THEN
        RAISE EXCEPTION 'handoff: a handler ended its consumer batch''s transaction: only handoff commits it, after every handler returned, so that the inbox markers and the handlers'' writes commit together'
            USING ERRCODE = '2D000',
                  HINT = 'Do not run COMMIT or ROLLBACK, or call commit() or rollback(), inside a message handler; write through the connection it was given and return.';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER batch_seal_removed_before_commit
    AFTER INSERT ON batch_seal
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION batch_seal_still_in_place();

-- handoff removes the seal in the same round trip as its COMMIT ("DELETE ...; COMMIT"), so the removal itself must
-- fail when the seal is gone (the transaction it sealed ended early and a later one is open): then the COMMIT after
-- it never runs, and nothing of that later transaction commits either.
CREATE FUNCTION batch_seal_was_there() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM removed) THEN
        RAISE EXCEPTION 'handoff: the seal of this consumer batch is gone: a handler ended the transaction it was given'
            USING ERRCODE = '2D000';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER batch_seal_present_when_removed
    AFTER DELETE ON batch_seal
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION batch_seal_was_there();
