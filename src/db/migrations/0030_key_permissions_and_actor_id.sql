-- Restricted keys (docs/product.md §16): a key's permissions per resource, { contracts, billing, webhooks,
-- bulk_jobs } each 'none', 'read' or 'write'. NULL: the preset its `access` names (read_write: all write;
-- read_only: all read), as every key made before this migration. Changing them takes effect at once: each request
-- reads its key's state, permissions included.
ALTER TABLE api_keys ADD COLUMN permissions jsonb;
-- An event's actor beyond its type and key: a bulk job's id, an OAuth connection's id.
ALTER TABLE contract_events ADD COLUMN actor_id text;
-- Two more kinds of actor (docs/product.md §3): a bulk job (actor_id: the job) and an OAuth connection.
ALTER TABLE contract_events DROP CONSTRAINT contract_events_actor_type_check;
ALTER TABLE contract_events ADD CONSTRAINT contract_events_actor_type_check
  CHECK (actor_type IN ('api_key', 'mcp', 'admin', 'scheduler', 'platform', 'billing', 'bulk_job', 'oauth'));
