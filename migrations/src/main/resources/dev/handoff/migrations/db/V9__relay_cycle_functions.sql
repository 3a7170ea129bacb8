-- The two statements of a busy relay cycle, as functions, so that PostgreSQL plans them once per server session
-- instead of at every call. The relay sends every statement of its own as the driver's unnamed one, which works
-- behind a pooler in transaction mode and leaves nothing in the session; but an unnamed statement is planned at
-- each execution, and these two took as long to plan as to run (docs/performance.md, "The relay's cycle"). A
-- PL/pgSQL function keeps its plans in the server session that runs it, invisible to a pooler, and drops them
-- when a table they read changes (DDL, ANALYZE): the first calls in a session are planned with their arguments,
-- later ones reuse a generic plan when it is no costlier. OutboxQueriesPlanTest checks both kinds of plan.
--
-- The bodies refer to their arguments as $1, $2, ..., typed, so that each is also a statement that can be prepared on
-- its own (the plan test does). They run with the caller's rights: the relay role's grants apply as if it had sent the
-- statement itself. search_path is the schema these migrations run in, whatever the calling session's.
-- To change either, add a migration that replaces it (CREATE OR REPLACE FUNCTION): Flyway refuses a schema whose
-- applied files changed.

-- Marks the batches a cycle wrote, for every shard given (one element of $1-$5 per shard, in (topic, shard) order
-- of the caller's choosing; $7-$10 hold each row: the 1-based index of its shard in $1-$5, its outbox id and its
-- stream ID). The lease rows are locked in (topic COLLATE "C", shard) order first, as every statement that locks
-- several of them does, so that two such transactions never deadlock. A shard whose lease $6 no longer holds at its
-- epoch changes nothing. Returns, per shard in order: 1 if its lease held (else 0), the rows marked, and the lease's
-- count of entries added before this mark (a plain read: every part of the statement sees the row as it was, and
-- only the lease's owner writes the count).
-- Each row is found through the unpublished index by its whole key, one bounded lookup per id, then by ctid: a join
-- of the outbox to the ids would leave the plan to the statistics, which in steady state say almost no row is
-- unpublished, and cost O(backlog) per batch exactly when a backlog builds up.
CREATE FUNCTION relay_mark_batches(text[], int[], bigint[], bigint[], boolean[], text, int[], bigint[], bigint[],
    bigint[])
    RETURNS TABLE (leased bigint, marked bigint, added_before bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY WITH w AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[], $5::boolean[])
  WITH ORDINALITY AS w(topic, shard, epoch, added, ends, ord)),
 before AS (SELECT w.ord, l.entries_added FROM relay_lease l JOIN w ON l.topic = w.topic AND l.shard = w.shard
  AND l.epoch = w.epoch WHERE l.owner = $6),
 locked AS (SELECT w.ord FROM relay_lease l JOIN w ON l.topic = w.topic AND l.shard = w.shard AND l.epoch = w.epoch
  WHERE l.owner = $6 ORDER BY l.topic COLLATE "C", l.shard FOR UPDATE OF l),
 lease AS (UPDATE relay_lease l SET entries_added = GREATEST(l.entries_added, w.added),
  batch_ids = CASE WHEN w.ends THEN NULL ELSE l.batch_ids END,
  batch_ms = CASE WHEN w.ends THEN NULL ELSE l.batch_ms END,
  batch_seq = CASE WHEN w.ends THEN NULL ELSE l.batch_seq END, updated_at = now()
  FROM locked k JOIN w ON w.ord = k.ord
  WHERE l.topic = w.topic AND l.shard = w.shard AND l.owner = $6 AND l.epoch = w.epoch RETURNING w.ord),
 done AS (UPDATE outbox o SET published_at = now(), stream_ms = t.ms, stream_seq = t.seq
  FROM (SELECT u.ord, u.ms, u.seq, x.tid
   FROM unnest($7::int[], $8::bigint[], $9::bigint[], $10::bigint[]) AS u(ord, id, ms, seq)
   JOIN w ON w.ord = u.ord CROSS JOIN LATERAL (SELECT i.ctid AS tid FROM outbox i WHERE i.topic = w.topic
    AND i.shard = w.shard AND i.id = u.id AND i.published_at IS NULL LIMIT 1) x) t
  WHERE o.ctid = t.tid AND t.ord IN (SELECT ord FROM lease) RETURNING t.ord)
 SELECT (SELECT count(*) FROM lease WHERE lease.ord = w.ord), (SELECT count(*) FROM done WHERE done.ord = w.ord),
  (SELECT b.entries_added FROM before b WHERE b.ord = w.ord) FROM w ORDER BY w.ord;
END
$$;

-- Assigns the next batch of every shard given (one element of $1-$4 per shard: up to $4 rows each), fenced by the
-- lease of owner $5 at the shard's epoch, unexpired: each shard's lowest unassigned rows, as many as fit in $6 bytes
-- of payload (at least one), recorded as its pending batch in its lease row with consecutive stream IDs above the
-- last one assigned. A shard whose batch is still pending gets nothing. The lease rows are locked in
-- (topic COLLATE "C", shard) order, as the mark above; a takeover waits for this transaction to commit. Each shard
-- starts at its lowest unassigned row, and so walks over the index entries of rows published since the last vacuum
-- (cheap once the first scan marked them dead): starting past the last batch instead would skip a row that commits
-- late with a lower id and let its key's later transaction overtake it (RelayExactlyOnceTest has the case).
-- Returns, per shard in order and then by id: the shard's 1-based index, whether its lease held, and each assigned
-- row with its stream ID (one row of NULLs for a shard that got none).
CREATE FUNCTION relay_assign_batches(text[], int[], bigint[], int[], text, bigint)
    RETURNS TABLE (ord bigint, leased boolean, id bigint, message_id uuid, message_key varchar, type varchar,
        payload bytea, headers text, created_at timestamptz, stream_ms bigint, stream_seq bigint)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY WITH w AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[])
  WITH ORDINALITY AS w(topic, shard, epoch, lim, ord)),
 lease AS (SELECT w.ord, l.topic, l.shard, w.lim, l.last_ms, l.last_seq, l.batch_ids IS NOT NULL AS busy,
  GREATEST(l.last_ms, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS ms
  FROM relay_lease l JOIN w ON l.topic = w.topic AND l.shard = w.shard AND l.epoch = w.epoch
  WHERE l.owner = $5 AND l.expires_at > clock_timestamp()
  ORDER BY l.topic COLLATE "C", l.shard FOR UPDATE OF l),
 base AS (SELECT ord, topic, shard, lim, ms, CASE WHEN ms = last_ms THEN last_seq ELSE -1 END AS seq
  FROM lease WHERE NOT busy),
 candidates AS (SELECT b.ord, o.id, o.message_id, o.message_key, o.type, o.payload, o.headers::text AS headers,
  o.created_at, sum(octet_length(o.payload)) OVER (PARTITION BY b.ord ORDER BY o.id) - octet_length(o.payload)
  AS bytes_before
  FROM base b CROSS JOIN LATERAL (SELECT * FROM outbox x WHERE x.topic = b.topic AND x.shard = b.shard
   AND x.published_at IS NULL AND x.stream_ms IS NULL ORDER BY x.id LIMIT b.lim) o),
 picked AS (SELECT *, row_number() OVER (PARTITION BY ord ORDER BY id) AS rn FROM candidates WHERE bytes_before < $6),
 batches AS (SELECT ord, count(*) AS n, array_agg(id ORDER BY id) AS ids FROM picked GROUP BY ord),
 moved AS (UPDATE relay_lease l SET last_ms = b.ms, last_seq = b.seq + p.n, batch_ids = p.ids,
  batch_ms = b.ms, batch_seq = b.seq + 1, updated_at = now()
  FROM base b JOIN batches p ON p.ord = b.ord WHERE l.topic = b.topic AND l.shard = b.shard)
 SELECT w.ord, le.ord IS NOT NULL, p.id, p.message_id, p.message_key, p.type, p.payload, p.headers,
  p.created_at, b.ms, b.seq + p.rn
 FROM w LEFT JOIN lease le ON le.ord = w.ord
 LEFT JOIN (picked p JOIN base b ON b.ord = p.ord) ON p.ord = w.ord
 ORDER BY w.ord, p.id;
END
$$;

-- Explicit, so that a database whose default privileges withhold EXECUTE from PUBLIC still lets the relay role call
-- them: they run with the caller's rights, so calling one grants nothing the caller's table privileges do not.
GRANT EXECUTE ON FUNCTION relay_mark_batches(text[], int[], bigint[], bigint[], boolean[], text, int[], bigint[],
    bigint[], bigint[]) TO PUBLIC;
GRANT EXECUTE ON FUNCTION relay_assign_batches(text[], int[], bigint[], int[], text, bigint) TO PUBLIC;
