-- Read-only keys (docs/product.md §1 access): chosen at generation, fixed for the key's life.
ALTER TABLE api_keys ADD COLUMN access text NOT NULL DEFAULT 'read_write' CHECK (access IN ('read_write', 'read_only'));

-- An Idempotency-Key answered by a contract change keeps the change's result (the contract after it), recorded in
-- the same commit; a replay renders the response from it as the first response was rendered. json, not jsonb:
-- it keeps the text as written, so the replay is the same body byte for byte. response_body stays
-- for responses recorded as sent (refusals).
ALTER TABLE idempotency_keys ADD COLUMN result json;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_completed;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_completed
  CHECK (state = 'in_progress' OR (status_code IS NOT NULL AND (response_body IS NOT NULL OR result IS NOT NULL)));

-- Events learnt from the platform (docs/product.md §3, §9) have actor "platform".
ALTER TABLE contract_events DROP CONSTRAINT contract_events_actor_type_check;
ALTER TABLE contract_events ADD CONSTRAINT contract_events_actor_type_check
  CHECK (actor_type IN ('api_key', 'mcp', 'admin', 'scheduler', 'platform'));
