-- Dead-letter retries requested from outside the consumer (DeadLetterAdmin, `handoff dlq retry`). An operator's
-- tool cannot run the application's handler, so it only records the request; the running consumers of the group
-- find it in their housekeeping and retry through their own handler (inbox marker and effect in one transaction).
-- Nothing is written to Redis: a retry never adds a stream entry.
--
-- The state a row is in follows from these columns and status:
--   status 'retried'                                  retried (the handler ran and committed, or the message had
--                                                     been processed meanwhile)
--   status 'dead', retry_requested_at set             retry requested, not yet picked up
--   status 'dead', retry_failed_at set, no request    a requested retry ran and the handler failed again
--   status 'dead', neither                            dead
-- A requested retry whose handler fails clears the request (so that a message that still fails is run once per
-- request, never in a loop) and keeps the failure beside the original error, which stays as it was.
ALTER TABLE dead_letter
    ADD COLUMN retry_requested_at timestamptz,
    ADD COLUMN retry_failed_at    timestamptz,
    ADD COLUMN retry_error        text;

-- The housekeeping's pick-up: the requests of one group, usually none. Partial, so it stays as small as the
-- number of open requests and costs nothing to the rows that are never retried.
CREATE INDEX dead_letter_retry_requested_idx ON dead_letter (consumer_group, id)
    WHERE retry_requested_at IS NOT NULL;
