-- The request log: one row per API or MCP request whose key was identified (refusals of a known key included), kept
-- 14 days, read by the admin per key, newest first. Written in batches from a buffer (db/requestLogWriter.ts), never
-- by the request itself. No bodies, no key: the key's id and fingerprint only, and a path with secrets scrubbed.
--
-- No foreign keys and no primary key index: each would be one more check or index entry in every batch's insert, and
-- nothing reads a row by id alone. `id` (from its identity) only breaks ties between rows of one millisecond. A shop's
-- rows go with the shop (db/privacy.ts); a key's stay until they expire.
CREATE TABLE request_log (
  id bigint GENERATED ALWAYS AS IDENTITY,
  shop_id bigint NOT NULL,
  key_id uuid NOT NULL,
  -- When the answer went out.
  at timestamptz(3) NOT NULL,
  key_fingerprint text NOT NULL,
  method text NOT NULL,
  -- The URL as requested, query included, with anything that looks like a secret replaced.
  path text NOT NULL,
  -- MCP: the tool (or tools, for a batch) the request called.
  mcp_tool text,
  status smallint NOT NULL,
  -- The error envelope's code, when the answer was an error (for MCP, a refused tool call's code too).
  error_code text,
  duration_us integer NOT NULL,
  request_id text NOT NULL,
  idempotency_key text,
  ip text,
  user_agent text
);
-- The admin's reads: one key's requests, newest first, from a point in time (cursor or `before`) ...
CREATE INDEX request_log_shop_key_at_idx ON request_log (shop_id, key_id, at, id);
-- ... or the whole shop's.
CREATE INDEX request_log_shop_at_idx ON request_log (shop_id, at, id);
-- Retention deletes what is older than 14 days. Rows arrive in time order, so a BRIN index (a few pages for the whole
-- table, next to nothing to maintain per insert) finds the old ones.
CREATE INDEX request_log_at_brin ON request_log USING brin (at);
