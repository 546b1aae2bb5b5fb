-- Each event records the contract's version right after it (a change of n events moves the version by n), so the
-- per-contract version a webhook carries only grows.
ALTER TABLE contract_events ADD COLUMN contract_version integer;

-- Outgoing webhooks (docs/product.md §10). An endpoint of a shop, at most 10 per shop.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  shop_id bigint NOT NULL REFERENCES shops (id),
  url text NOT NULL,
  description text,
  -- Event types it receives, or {*} for all.
  events text[] NOT NULL CHECK (cardinality(events) > 0),
  status text NOT NULL CHECK (status IN ('enabled', 'disabled')),
  -- Why it is disabled: 'manual', 'gone' (it answered 410) or 'failing' (5 days of failed deliveries).
  disabled_reason text CHECK (disabled_reason IN ('manual', 'gone', 'failing')),
  disabled_at timestamptz(3),
  -- whsec_…: shown to the merchant on request, so kept as is (never logged, never in an error). During a rotation
  -- the previous secret signs beside it until previous_secret_expires_at.
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz(3),
  -- The first failure of the current run of failures (cleared by a success): 5 days of it disables the endpoint.
  failing_since timestamptz(3),
  created_at timestamptz(3) NOT NULL,
  updated_at timestamptz(3) NOT NULL,
  CONSTRAINT webhook_endpoints_disabled CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
);
CREATE INDEX webhook_endpoints_shop_idx ON webhook_endpoints (shop_id, created_at);
-- The outbox reads the enabled endpoints of a shop on every committed event.
CREATE INDEX webhook_endpoints_enabled_idx ON webhook_endpoints (shop_id) WHERE status = 'enabled';

-- The outbox: one delivery per event and endpoint, written in the same transaction as the event (or a test event).
-- Its id names it on the wire (webhook-id msg_<id>): the same on every attempt and resend.
CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  shop_id bigint NOT NULL,
  -- The contract and event it tells of (null for a test event); one contract's deliveries to one endpoint go out in
  -- id order.
  contract_id bigint,
  event_id bigint,
  contract_version integer,
  type text NOT NULL,
  -- The contract right after the event (a test event: the whole payload's data).
  contract json NOT NULL,
  test boolean NOT NULL DEFAULT false,
  -- pending → delivering (claimed, until lease_until) → succeeded | failed (retries exhausted, or the endpoint gone)
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz(3) NOT NULL,
  lease_until timestamptz(3),
  last_status_code integer,
  last_error text,
  created_at timestamptz(3) NOT NULL,
  finished_at timestamptz(3)
);
-- What the dispatcher claims: due deliveries, oldest first.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'delivering');
-- Order per contract and endpoint: is an earlier one still unfinished?
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, contract_id, id) WHERE status IN ('pending', 'delivering');
-- The delivery log of an endpoint, newest first. (The 30-day cleanup walks the primary key from the oldest: ids
-- grow with created_at, so no index of its own is kept up on every write.)
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id);

-- Every attempt of a delivery, for the delivery log (kept 30 days with its delivery).
CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  at timestamptz(3) NOT NULL,
  status_code integer,
  duration_ms integer NOT NULL,
  error text,
  -- The first 4 KB of the response body.
  response_body text
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- Wakes the dispatchers (LISTEN svc_webhook_deliveries) when deliveries are written, delivered at commit, so a
-- rolled-back change wakes nobody. Only when no earlier delivery is due or being sent: then a dispatcher is at work
-- and its loop claims these too (it runs until nothing is due), and under load the listeners are not woken by every
-- commit.
CREATE FUNCTION svc_notify_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_webhook_deliveries();
