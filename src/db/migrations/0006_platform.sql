-- Platform mode (docs/product.md §9). A shop that uninstalled the app: its keys answer 403 app_not_installed until it
-- reinstalls (null: installed, or standalone).
ALTER TABLE shops ADD COLUMN uninstalled_at timestamptz(3);

-- The mirror's position in the platform's history of each contract: a re-read is applied only when it is newer.
-- revisionId is an UnsignedInt64 (numeric keeps every value and compares as a number).
ALTER TABLE subscription_contracts ADD COLUMN platform_revision numeric(20, 0);
ALTER TABLE subscription_contracts ADD COLUMN platform_updated_at timestamptz(3);

-- One row per shop that installed the app in platform mode: its tokens (AES-256-GCM under TOKEN_ENCRYPTION_KEY,
-- never in clear), the webhook registration and the import's progress, and the reconciliation's watermark.
CREATE TABLE platform_installations (
  shop_id bigint PRIMARY KEY REFERENCES shops (id),
  access_token text,
  access_token_expires_at timestamptz(3),
  refresh_token text,
  refresh_token_expires_at timestamptz(3),
  scopes text,
  installed_at timestamptz(3) NOT NULL,
  webhooks_registered_at timestamptz(3),
  -- pending → running → completed | failed; paged for a small shop, bulk for a large one.
  import_status text NOT NULL DEFAULT 'pending' CHECK (import_status IN ('pending', 'running', 'completed', 'failed')),
  import_mode text CHECK (import_mode IN ('paged', 'bulk')),
  import_total integer,
  import_done integer NOT NULL DEFAULT 0,
  import_cursor text,
  import_bulk_operation_id text,
  import_started_at timestamptz(3),
  import_finished_at timestamptz(3),
  import_error text,
  -- Reconciliation re-reads the contracts updated since this moment (minus a margin).
  synced_until timestamptz(3),
  last_sync_at timestamptz(3),
  updated_at timestamptz(3) NOT NULL
);

-- Webhooks from the platform, stored before they are answered and processed after: deduplicated by the platform's
-- X-Shopify-Webhook-Id. Processed rows are kept a while as the dedupe window.
CREATE TABLE platform_webhooks (
  webhook_id text PRIMARY KEY,
  shop_domain text NOT NULL,
  topic text NOT NULL,
  payload jsonb NOT NULL,
  received_at timestamptz(3) NOT NULL,
  triggered_at timestamptz(3),
  attempts integer NOT NULL DEFAULT 0,
  lease_until timestamptz(3),
  processed_at timestamptz(3),
  last_error text
);
CREATE INDEX platform_webhooks_unprocessed_idx ON platform_webhooks (received_at) WHERE processed_at IS NULL;
CREATE INDEX platform_webhooks_processed_idx ON platform_webhooks (processed_at) WHERE processed_at IS NOT NULL;

-- customers/data_request: recorded for the operator, who answers it with `svc compliance export`.
CREATE TABLE compliance_requests (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  shop_domain text NOT NULL,
  topic text NOT NULL,
  customer_id text,
  payload jsonb NOT NULL,
  received_at timestamptz(3) NOT NULL
);
