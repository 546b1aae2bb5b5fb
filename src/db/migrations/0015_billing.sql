-- Renewals: svc bills every ACTIVE contract on its next billing date and recovers failed payments.
--
-- Where a contract's billing stands is part of its state, written by the change path with every other field:
--   billing_status            ok | retrying (a failed attempt will be retried) | action_required (the customer must
--                             authenticate)
--   billing_failed_attempts   failed attempts of the cycle being billed
--   billing_next_attempt_at   when the next retry of that cycle is due (null: none scheduled)
--   billing_cycle_date        the cycle being billed or retried (null: none)
--   billing_last_attempt      the contract's latest attempt, as clients see it (its status `pending`: an attempt
--                             awaits its outcome, and actions are refused with billing_in_progress meanwhile)
ALTER TABLE subscription_contracts ADD COLUMN billing_status text NOT NULL DEFAULT 'ok' CHECK (billing_status IN ('ok', 'retrying', 'action_required'));
ALTER TABLE subscription_contracts ADD COLUMN billing_failed_attempts integer NOT NULL DEFAULT 0 CHECK (billing_failed_attempts >= 0);
ALTER TABLE subscription_contracts ADD COLUMN billing_next_attempt_at timestamptz(3);
ALTER TABLE subscription_contracts ADD COLUMN billing_cycle_date timestamptz(3);
ALTER TABLE subscription_contracts ADD COLUMN billing_last_attempt jsonb;
-- Standalone mode: how the contract's simulated payment method answers the test gateway.
ALTER TABLE subscription_contracts ADD COLUMN payment_behaviour text NOT NULL DEFAULT 'succeeds'
  CHECK (payment_behaviour IN ('succeeds', 'insufficient_funds', 'card_declined', 'expired_card', 'requires_action', 'out_of_stock'));
-- A billing worker's claim on a due contract (one statement claims a batch; another worker skips it until then, or
-- until the contract changes: the claim holds for the version it was made at).
ALTER TABLE subscription_contracts ADD COLUMN billing_claimed_until timestamptz(3);
ALTER TABLE subscription_contracts ADD COLUMN billing_claimed_version integer;
-- When the contract is next due to be billed: an ACTIVE contract with no attempt awaiting its outcome is due at its
-- scheduled retry, else at its next billing date. Kept by the database from the state, so no writer can forget it,
-- and indexed for the worker's claim.
ALTER TABLE subscription_contracts ADD COLUMN billing_due_at timestamptz(3) GENERATED ALWAYS AS (
  CASE WHEN status = 'ACTIVE' AND (billing_last_attempt ->> 'status') IS DISTINCT FROM 'pending'
       THEN coalesce(billing_next_attempt_at, next_billing_date) END
) STORED;
CREATE INDEX contracts_billing_due_idx ON subscription_contracts (billing_due_at) WHERE billing_due_at IS NOT NULL;

-- Every billing attempt: exactly one per (contract, cycle, attempt number), whoever creates it. Written by the change
-- path from the contract's billing.attempted and outcome events (db/contractEventConsumers.ts), in the statement of
-- the change itself.
CREATE TABLE billing_attempts (
  id uuid PRIMARY KEY,
  shop_id bigint NOT NULL REFERENCES shops (id),
  contract_id bigint NOT NULL REFERENCES subscription_contracts (id),
  cycle_date timestamptz(3) NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  trigger text NOT NULL CHECK (trigger IN ('schedule', 'retry', 'bill_now')),
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'action_required')),
  error_code text,
  platform_error_code text,
  error_message text,
  next_action_url text,
  "order" jsonb,
  -- Exact: the decimal string of the contract's total (numeric keeps the scale it is given).
  amount numeric NOT NULL,
  currency_code text NOT NULL CHECK (currency_code ~ '^[A-Z]{3}$'),
  -- Sent with the attempt to the gateway or platform, which creates at most one attempt per key.
  idempotency_key text NOT NULL UNIQUE,
  -- The gateway's or platform's id of the attempt, once it answered; when svc handed the attempt over.
  platform_reference text,
  submitted_at timestamptz(3),
  created_at timestamptz(3) NOT NULL,
  completed_at timestamptz(3),
  UNIQUE (contract_id, cycle_date, attempt)
);
CREATE INDEX billing_attempts_shop_idx ON billing_attempts (shop_id, created_at DESC, id DESC);
CREATE INDEX billing_attempts_contract_idx ON billing_attempts (contract_id, created_at DESC, id DESC);
CREATE INDEX billing_attempts_pending_idx ON billing_attempts (created_at) WHERE status = 'pending';
CREATE INDEX billing_attempts_reference_idx ON billing_attempts (shop_id, platform_reference) WHERE platform_reference IS NOT NULL;

-- A shop's dunning policy (absent: the default). JSON as the API shows it: paymentRetries, inventoryRetries, finalAction.
CREATE TABLE billing_policies (
  shop_id bigint PRIMARY KEY REFERENCES shops (id),
  policy jsonb NOT NULL,
  updated_at timestamptz(3) NOT NULL
);

-- Standalone mode: the last order number the test gateway gave in a shop (orders are named #1001, #1002, …).
CREATE TABLE shop_order_counters (
  shop_id bigint PRIMARY KEY REFERENCES shops (id),
  last_number bigint NOT NULL
);

-- The changes renewals make by themselves are recorded with the actor `billing`.
ALTER TABLE contract_events DROP CONSTRAINT contract_events_actor_type_check;
ALTER TABLE contract_events ADD CONSTRAINT contract_events_actor_type_check
  CHECK (actor_type IN ('api_key', 'mcp', 'admin', 'scheduler', 'platform', 'billing'));
