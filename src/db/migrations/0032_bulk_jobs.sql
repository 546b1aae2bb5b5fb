-- Bulk jobs (docs/product.md §15): one change across many contracts of a shop, previewed contract by contract, then
-- run, each contract at most once. A job and its items are rows; workers claim items under a lease
-- (workers/bulkJobs.ts) and record each item's outcome in the change's own statement (db/contractWrites.ts).
CREATE TABLE bulk_jobs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  shop_id bigint NOT NULL REFERENCES shops (id),
  -- The order jobs were made in: a shop's queue runs in it, and lists page by it.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  status text NOT NULL CHECK (status IN ('previewing', 'previewed', 'queued', 'running', 'completed', 'cancelled', 'failed', 'expired')),
  -- Made as a preview (it was previewed before it ran, if it ran).
  preview boolean NOT NULL,
  -- The selector as given, but for a list of ids: their count (the ids are the items).
  selector jsonb NOT NULL,
  change jsonb NOT NULL,
  created_by jsonb NOT NULL,
  matched integer NOT NULL,
  -- When the job ended (or its preview did): its counts and totals as they stood, so a finished job is read without
  -- counting its items again.
  final_counts jsonb,
  final_totals jsonb,
  failure text,
  created_at timestamptz(3) NOT NULL,
  started_at timestamptz(3),
  finished_at timestamptz(3),
  expires_at timestamptz(3)
);
CREATE INDEX bulk_jobs_shop_idx ON bulk_jobs (shop_id, seq);
-- The workers' look for work: the few jobs not yet ended.
CREATE INDEX bulk_jobs_unfinished_idx ON bulk_jobs (seq) WHERE status IN ('previewing', 'previewed', 'queued', 'running');

CREATE TABLE bulk_job_items (
  job_id uuid NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  contract_id bigint NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
  error_code text,
  error_message text,
  error_details jsonb,
  -- The contract's next order total before and after (succeeded: it did, or in a preview would), in its currency.
  currency_code text,
  total_before numeric,
  total_after numeric,
  -- The event the change recorded (succeeded, not in a preview).
  event_id bigint,
  -- A worker holds it until then (a killed worker's items are taken over after); not tried again before
  -- not_before (its contract's billing attempt awaits an outcome).
  lease_until timestamptz(3),
  not_before timestamptz(3),
  PRIMARY KEY (job_id, contract_id)
);
-- What is left to do of a job, in contract order.
CREATE INDEX bulk_job_items_pending_idx ON bulk_job_items (job_id, contract_id) WHERE status = 'pending';

-- A bulk job's events to webhook endpoints (bulk_job.previewed, bulk_job.finished) are deliveries without a contract,
-- like api_key.leaked: nothing to change in webhook_deliveries.
