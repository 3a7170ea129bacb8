-- The seal on a consumer batch's transaction, now a setting of that transaction instead of a batch_seal row (V4).
-- Same two guarantees, without a table write: the row's insert and delete were about half of what a consumer
-- batch's transaction costs beyond the markers and the handlers' writes (docs/performance.md, "What the seal
-- costs").
--
-- The statement that inserts a batch's markers also sets handoff.batch_seal to the batch's token, local to the
-- transaction (set_config(..., true)). Every marker inserted or updated queues the deferred trigger below, which
-- fails the commit if the setting still holds a token: a handler that ran COMMIT as SQL, or called commit() on the
-- connection under the one it was given, commits nothing, and PostgreSQL rolls back the markers and the effects
-- together. handoff's own commit first calls batch_unseal(token) in the same round trip as its COMMIT
-- ("SELECT ...; COMMIT"): it clears the setting, or, when the setting does not hold the token (the transaction it
-- sealed ended early, and a later one is open), raises, so that the COMMIT after it never runs.
--
-- A transaction that never set the setting (the relay, the inbox purge, a consumer of an earlier version) passes
-- the trigger whatever it writes. batch_seal and its triggers stay, unused by this version, so that consumers of
-- the previous one keep working through a rolling upgrade; a later migration drops them.
-- The functions only call pg_catalog's, so they need no search_path. They run with the caller's rights.

CREATE FUNCTION batch_seal_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('handoff.batch_seal', true) <> '' THEN
        RAISE EXCEPTION 'handoff: a handler ended its consumer batch''s transaction: only handoff commits it, after every handler returned, so that the inbox markers and the handlers'' writes commit together'
            USING ERRCODE = '2D000',
                  HINT = 'Do not run COMMIT or ROLLBACK, or call commit() or rollback(), inside a message handler; write through the connection it was given and return.';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER inbox_batch_sealed_until_handoff_commits
    AFTER INSERT OR UPDATE ON inbox
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION batch_seal_cleared();

-- Clears the seal of the open transaction, which must be token's.
CREATE FUNCTION batch_unseal(token uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('handoff.batch_seal', true) IS DISTINCT FROM token::text THEN
        RAISE EXCEPTION 'handoff: the seal of this consumer batch is gone: a handler ended the transaction it was given'
            USING ERRCODE = '2D000';
    END IF;
    PERFORM set_config('handoff.batch_seal', '', true);
END
$$;

GRANT EXECUTE ON FUNCTION batch_unseal(uuid) TO PUBLIC;
