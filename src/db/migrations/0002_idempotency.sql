-- Idempotency keys of the public API (POST /api/v1/...). One row per (shop, key): claimed atomically with
-- INSERT … ON CONFLICT, so two concurrent requests with one key execute once, on any number of instances.

CREATE TABLE idempotency_keys (
  shop_id bigint NOT NULL REFERENCES shops (id),
  -- SHA-256 (hex) of the client's Idempotency-Key: a client that pastes a secret there does not get it stored.
  key_digest text NOT NULL,
  -- SHA-256 (hex) of the canonical request (method, path, body): the same key with another request is refused.
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
  -- The request id of the execution that holds (in_progress) or held (completed) the key.
  owner_request_id text NOT NULL,
  status_code integer,
  response_body text,
  -- When the current execution claimed the key: an in_progress row older than the lock timeout was abandoned
  -- (a crash) and may be taken over.
  locked_at timestamptz(3) NOT NULL,
  created_at timestamptz(3) NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  PRIMARY KEY (shop_id, key_digest),
  CONSTRAINT idempotency_keys_completed CHECK (state = 'in_progress' OR (status_code IS NOT NULL AND response_body IS NOT NULL))
);
-- The periodic cleanup deletes by expiry.
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
