-- Takes (status delivering, leased until p_lease_until) the deliveries of p_ids that are still due, skipping any
-- another instance holds or took since the walk saw them; answers their ids. Which may go, and in which order, the
-- claim's walk decided (svc_claim_webhook_deliveries); the row lock re-checks that each is still due.
--
-- This file is the function's one definition: the migrator applies it (src/db/migrate.ts) whenever its text changes.
CREATE OR REPLACE FUNCTION svc_take_webhook_deliveries(p_ids bigint[], p_now timestamptz, p_lease_until timestamptz) RETURNS bigint[]
  LANGUAGE plpgsql
  -- Planned at each call, with the table's size of the moment: a plan kept from when the outbox was nearly empty read
  -- the whole due index during a billing storm to find a hundred ids, where the primary key needs a few pages.
  SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  taken bigint[];
BEGIN
  WITH t AS (
    UPDATE webhook_deliveries d SET status = 'delivering', lease_until = p_lease_until, attempts = d.attempts + 1
      FROM (SELECT l.id FROM webhook_deliveries l
             WHERE l.id = ANY (p_ids)
               AND ((l.status = 'pending' AND l.next_attempt_at <= p_now) OR (l.status = 'delivering' AND l.lease_until <= p_now))
               FOR UPDATE SKIP LOCKED) x
     WHERE d.id = x.id
    RETURNING d.id)
  SELECT coalesce(array_agg(t.id), '{}') INTO taken FROM t;
  RETURN taken;
END $$;
