-- OAuth for MCP clients (docs/mcp-assistants.md): svc is the authorization server of its own /mcp.
--
-- A client is known by the id it registered under (RFC 7591) or by the https URL of its metadata document; it
-- belongs to no shop (it registers before any merchant approves it). A grant is one approval by a merchant: a client,
-- a shop, the permissions approved and the resource (RFC 8707) the tokens are for. Codes and tokens are stored as the
-- SHA-256 digests of what was handed out, never in any other form, as API keys are.
CREATE TABLE oauth_clients (
  id text PRIMARY KEY,
  -- 'registered' (POST /oauth/register) or 'metadata_document' (the id is the URL of the client's document).
  kind text NOT NULL,
  name text NOT NULL,
  redirect_uris text[] NOT NULL,
  -- The metadata as registered or as fetched (client_uri, logo_uri …), for display.
  metadata jsonb NOT NULL,
  created_at timestamptz(3) NOT NULL,
  -- A metadata document is fetched again once this is old.
  fetched_at timestamptz(3)
);

CREATE TABLE oauth_grants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  shop_id bigint NOT NULL REFERENCES shops(id),
  client_id text NOT NULL,
  -- The client's name when the merchant approved it: the name the merchant saw, shown on Settings → API and in the
  -- request log.
  client_name text NOT NULL,
  redirect_uri text NOT NULL,
  resource text NOT NULL,
  permissions jsonb NOT NULL,
  created_at timestamptz(3) NOT NULL,
  -- When its code was exchanged for the first tokens (a grant whose code never was is no connection).
  connected_at timestamptz(3),
  last_used_at timestamptz(3),
  revoked_at timestamptz(3),
  -- 'disconnected' (the merchant), 'code_replayed', 'refresh_reused' (an attack, RFC 6749 §4.1.2 / OAuth 2.1 §4.3.1).
  revoked_reason text
);
CREATE INDEX oauth_grants_shop_idx ON oauth_grants (shop_id, created_at);

CREATE TABLE oauth_codes (
  digest text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  shop_id bigint NOT NULL,
  code_challenge text NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  used_at timestamptz(3)
);
CREATE INDEX oauth_codes_grant_idx ON oauth_codes (grant_id);

CREATE TABLE oauth_tokens (
  digest text PRIMARY KEY,
  grant_id uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  shop_id bigint NOT NULL,
  -- 'access' or 'refresh'.
  kind text NOT NULL,
  created_at timestamptz(3) NOT NULL,
  expires_at timestamptz(3) NOT NULL,
  -- A refresh token, when it was exchanged: it works once (rotation); a second use revokes the grant.
  used_at timestamptz(3)
);
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);

-- The request log records OAuth requests under their grant (the connection), which has no key.
ALTER TABLE request_log ADD COLUMN grant_id uuid, ALTER COLUMN key_id DROP NOT NULL, ALTER COLUMN key_fingerprint DROP NOT NULL;
CREATE INDEX request_log_shop_grant_at_idx ON request_log (shop_id, grant_id, at, id) WHERE grant_id IS NOT NULL;
