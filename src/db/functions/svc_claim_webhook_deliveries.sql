-- The outbox's claim (workers/webhookDispatcher.ts): due deliveries oldest first, in order per contract and endpoint,
-- of enabled endpoints, SKIP LOCKED, walked along the due index whatever the statistics say, each with its endpoint
-- and event; what it walks past and cannot send yet it parks until it can go (one behind an earlier delivery that
-- waits for a later attempt; one of an endpoint not enabled), and the deliveries of an endpoint that is gone are
-- dropped. Its settings keep the planner on the due index's walk and one generic plan per connection.
--
-- This file is the function's one definition: the migrator applies it (src/db/migrate.ts) whenever its text changes.
-- Dropped first: its result's columns may change, which CREATE OR REPLACE cannot do.
DROP FUNCTION IF EXISTS svc_claim_webhook_deliveries(timestamptz, int, timestamptz);
CREATE FUNCTION svc_claim_webhook_deliveries(p_now timestamptz, p_limit int, p_lease_until timestamptz)
  RETURNS TABLE (id bigint, endpoint_id uuid, contract_id bigint, event_id bigint, contract_version integer, type text,
                 contract text, test boolean, attempts integer, created_at timestamptz, url text, secret text,
                 previous_secret text, previous_secret_expires_at timestamptz, event_at timestamptz, actor_type text,
                 actor_key_fingerprint text, actor_id text, from_status text, to_status text, event_data jsonb)
  LANGUAGE plpgsql
  SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
  SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  r record;
  -- Claimable as walked, not yet taken; claimed (taken: another instance may have taken some first).
  candidates bigint[] := '{}';
  claimed bigint[] := '{}';
  -- Waiting behind an earlier delivery: due again at that one's next attempt.
  behind_ids bigint[] := '{}';
  -- Of an endpoint that is not enabled.
  idle_ids bigint[] := '{}';
  idle_endpoints uuid[] := '{}';
  -- Of an endpoint that is gone.
  gone_ids bigint[] := '{}';
BEGIN
  FOR r IN
    SELECT d.id, d.status, d.endpoint_id,
           (SELECT w.status FROM webhook_endpoints w WHERE w.id = d.endpoint_id) AS endpoint_status,
           h.status AS head_status, h.next_attempt_at AS head_at
      FROM webhook_deliveries d
      -- The earliest unfinished delivery of the same contract to the same endpoint, if any: it goes first.
      LEFT JOIN LATERAL (
        SELECT p.status, p.next_attempt_at FROM webhook_deliveries p
         WHERE p.endpoint_id = d.endpoint_id AND p.contract_id = d.contract_id AND p.id < d.id
           AND p.status IN ('pending', 'delivering')
         ORDER BY p.id LIMIT 1) h ON true
     WHERE d.status IN ('pending', 'delivering')
       -- The walk's bound in the index: a delivery in flight was due when it was claimed, so both kinds are here.
       AND d.next_attempt_at <= p_now
       AND ((d.status = 'pending' AND d.next_attempt_at <= p_now) OR (d.status = 'delivering' AND d.lease_until <= p_now))
     ORDER BY d.next_attempt_at, d.id
     -- A bound on one claim's walk, whatever is waiting; the next claim goes on past what this one parked.
     LIMIT 50000
  LOOP
    IF r.endpoint_status IS NULL THEN
      -- Its endpoint was deleted while the change that wrote it committed: nothing will ever be sent.
      gone_ids := gone_ids || r.id;
    ELSIF r.endpoint_status <> 'enabled' THEN
      -- (One in flight whose lease ran out, its sender gone, waits as pending: sent again once enabled.)
      idle_ids := idle_ids || r.id;
      IF NOT r.endpoint_id = ANY (idle_endpoints) THEN idle_endpoints := idle_endpoints || r.endpoint_id; END IF;
    ELSIF r.head_status IS NOT NULL THEN
      -- Behind an earlier delivery that waits for a later attempt: parked until then (one in flight, or due now,
      -- will be done in a moment).
      IF r.status = 'pending' AND r.head_status = 'pending' AND r.head_at > p_now THEN
        behind_ids := behind_ids || r.id;
      END IF;
    ELSE
      candidates := candidates || r.id;
      IF cardinality(claimed) + cardinality(candidates) >= p_limit THEN
        claimed := claimed || svc_take_webhook_deliveries(candidates, p_now, p_lease_until);
        candidates := '{}';
        EXIT WHEN cardinality(claimed) >= p_limit;
      END IF;
    END IF;
  END LOOP;
  IF cardinality(candidates) > 0 THEN
    claimed := claimed || svc_take_webhook_deliveries(candidates, p_now, p_lease_until);
  END IF;

  IF cardinality(behind_ids) > 0 THEN
    -- The delivery each waits for is looked up again: one sent again meanwhile (resend) is due now, and its
    -- followers with it. Rows another instance or a resend holds are left as they are (SKIP LOCKED).
    UPDATE webhook_deliveries d SET next_attempt_at = x.at
      FROM (SELECT l.id, h.status, h.next_attempt_at AS at
              FROM (SELECT l.id, l.endpoint_id, l.contract_id FROM webhook_deliveries l
                     WHERE l.id = ANY (behind_ids) AND l.status = 'pending' FOR UPDATE SKIP LOCKED) l
              CROSS JOIN LATERAL (
                SELECT p.status, p.next_attempt_at FROM webhook_deliveries p
                 WHERE p.endpoint_id = l.endpoint_id AND p.contract_id = l.contract_id AND p.id < l.id
                   AND p.status IN ('pending', 'delivering')
                 ORDER BY p.id LIMIT 1) h) x
     WHERE d.id = x.id AND x.status = 'pending' AND x.at > p_now AND d.next_attempt_at < x.at;
  END IF;
  IF cardinality(idle_ids) > 0 THEN
    -- The endpoints' rows are held (FOR SHARE) while their deliveries are parked: enabling one waits for this
    -- transaction and then sets them due again, or came first and they are not parked.
    PERFORM 1 FROM webhook_endpoints w WHERE w.id = ANY (idle_endpoints) FOR SHARE;
    UPDATE webhook_deliveries d SET next_attempt_at = 'infinity', status = 'pending', lease_until = NULL
      FROM (SELECT l.id FROM webhook_deliveries l JOIN webhook_endpoints w ON w.id = l.endpoint_id
             WHERE l.id = ANY (idle_ids) AND w.status <> 'enabled'
               AND (l.status = 'pending' OR (l.status = 'delivering' AND l.lease_until <= p_now))
               FOR UPDATE OF l SKIP LOCKED) x
     WHERE d.id = x.id;
  END IF;

  IF cardinality(gone_ids) > 0 THEN
    -- (Their attempts go with them: webhook_attempts' foreign key cascades.)
    DELETE FROM webhook_deliveries d
     WHERE d.id IN (SELECT l.id FROM webhook_deliveries l
                     WHERE l.id = ANY (gone_ids) AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = l.endpoint_id)
                       FOR UPDATE SKIP LOCKED);
  END IF;

  RETURN QUERY
  SELECT c.id, c.endpoint_id, c.contract_id, c.event_id, c.contract_version, c.type, c.contract::text, c.test, c.attempts,
         c.created_at::timestamptz, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at::timestamptz,
         e.at::timestamptz, e.actor_type, e.actor_key_fingerprint, e.actor_id, e.from_status, e.to_status, e.data
    FROM webhook_deliveries c
    JOIN webhook_endpoints w ON w.id = c.endpoint_id
    LEFT JOIN contract_events e ON e.id = c.event_id
   WHERE c.id = ANY (claimed);
END $$;

