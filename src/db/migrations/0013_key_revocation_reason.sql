-- Why a key was revoked: 'revoked' by the merchant (Settings → API, the admin API), or 'leaked' when a secret
-- scanner (GitHub's secret scanning partner program, POST /secret-scanning/github) reported it found in public. A
-- leaked key keeps when it was reported and where it was found (the report's URL, which may be absent). Keys
-- revoked before this migration were revoked by hand.
ALTER TABLE api_keys ADD COLUMN revoked_reason text CHECK (revoked_reason IN ('revoked', 'leaked'));
ALTER TABLE api_keys ADD COLUMN leaked_at timestamptz(3);
ALTER TABLE api_keys ADD COLUMN leaked_url text;
UPDATE api_keys SET revoked_reason = 'revoked' WHERE revoked_at IS NOT NULL;
-- A leaked key is a revoked one; a reason belongs to a revoked key only.
ALTER TABLE api_keys ADD CONSTRAINT api_keys_leaked_is_revoked
  CHECK ((revoked_reason IS DISTINCT FROM 'leaked' OR (revoked_at IS NOT NULL AND leaked_at IS NOT NULL))
         AND (revoked_reason IS NULL OR revoked_at IS NOT NULL));
