-- Wakes the dispatchers (LISTEN svc_webhook_deliveries) when deliveries are written, delivered at commit, so a
-- rolled-back change wakes nobody. Only when no earlier delivery is due or being sent: then a dispatcher is at work
-- and its loop claims these too (it runs until nothing is due), and under load the listeners are not woken by every
-- commit.
--
-- This file is the function's one definition: the migrator applies it (src/db/migrate.ts) whenever its text changes.
CREATE OR REPLACE FUNCTION svc_notify_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM inserted) AND NOT EXISTS (
    SELECT 1 FROM webhook_deliveries d
     WHERE d.status IN ('pending', 'delivering') AND d.next_attempt_at <= now()
       AND d.id < (SELECT min(id) FROM inserted)
  ) THEN
    PERFORM pg_notify('svc_webhook_deliveries', '');
  END IF;
  RETURN NULL;
END $$;
