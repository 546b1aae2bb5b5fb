import type { Database, RunSql } from './client.js';

/**
 * The request log's statements (migration 0012). A batch goes in as ONE statement with ONE parameter: the entries as
 * a JSON array, spread into rows by the database (json_to_recordset). Serialising the batch is one JSON.stringify,
 * where a parameter per column and row would cost the driver a conversion each.
 */
const INSERT = `
  INSERT INTO request_log (shop_id, key_id, grant_id, at, key_fingerprint, method, path, mcp_tool, status, mcp_status, error_code,
                           duration_us, request_id, idempotency_key, ip, user_agent)
  SELECT r.s::bigint, r.k::uuid, r.g::uuid, to_timestamp(r.t / 1000.0), r.f, r.m, r.p, r.tool, r.st, r.ms, r.e, r.d, r.rid, r.ik, r.ip, r.ua
    FROM json_to_recordset($1::json) AS r(s text, k text, g text, f text, t double precision, m text, p text, tool text, st smallint,
                                         ms smallint, e text, d integer, rid text, ik text, ip text, ua text)
    -- A shop deleted meanwhile (shop/redact) gets no rows: its deletion locks the shop first, so this waits for it and
    -- then finds no shop.
   WHERE EXISTS (SELECT 1 FROM shops sh WHERE sh.id = r.s::bigint FOR KEY SHARE)`;

/** How long one batch may take before it counts as failed (it is then tried again, and the API never waits on it). */
const INSERT_TIMEOUT_MS = 10_000;

/**
 * Writes a batch of entries (each a RequestLogEntry as JSON text), outside any request: on a session of its own (not
 * a request's connection), as a prepared statement, with its own timeout.
 */
export function insertRequestLogBatch(db: Database, entries: string[]): Promise<void> {
  return db.withSession(async (run) => {
    await run(INSERT, [`[${entries.join(',')}]`], { name: 'request_log_insert', timeoutMs: INSERT_TIMEOUT_MS });
  });
}

export type RequestLogRow = {
  id: string;
  at: Date;
  key_id: string | null;
  key_fingerprint: string | null;
  grant_id: string | null;
  connection_name: string | null;
  method: string;
  path: string;
  mcp_tool: string | null;
  status: number;
  mcp_status: number | null;
  error_code: string | null;
  duration_us: number;
  request_id: string;
  idempotency_key: string | null;
  ip: string | null;
  user_agent: string | null;
};

export type RequestLogQuery = {
  shopId: string;
  keyId?: string;
  /** Only one connection's (OAuth grant's) requests. */
  grantId?: string;
  statusMin: number;
  statusMax: number;
  /** Rows whose path contains this text; '' for any. */
  pathContains: string;
  /** Only rows strictly before this (time, id): from `before` or a cursor. */
  upTo: { at: Date; id: string };
  limit: number;
};

const COLUMNS = `id::text AS id, at, key_id::text AS key_id, key_fingerprint, grant_id::text AS grant_id,
  (SELECT g.client_name FROM oauth_grants g WHERE g.id = request_log.grant_id) AS connection_name, method, path, mcp_tool, status,
  mcp_status, error_code, duration_us, request_id, idempotency_key, ip, user_agent`;
// One statement per shape (a key, a connection, or the whole shop), so each keeps a plan that walks its index backwards. A refused
// MCP tool call is filtered by the status its refusal has on the API (mcp_status), not by the exchange's 200.
const filters = (n: number) => `coalesce(mcp_status, status) BETWEEN $${n} AND $${n + 1} AND ($${n + 2} = '' OR strpos(path, $${n + 2}) > 0)
  AND (at, id) < ($${n + 3}, $${n + 4}::bigint) ORDER BY at DESC, id DESC LIMIT $${n + 5}`;
const BY_KEY = `SELECT ${COLUMNS} FROM request_log WHERE shop_id = $1 AND key_id = $2::uuid AND ${filters(3)}`;
const BY_GRANT = `SELECT ${COLUMNS} FROM request_log WHERE shop_id = $1 AND grant_id = $2::uuid AND ${filters(3)}`;
const BY_SHOP = `SELECT ${COLUMNS} FROM request_log WHERE shop_id = $1 AND ${filters(2)}`;

/** A shop's logged requests, newest first: at most `limit` rows. */
export function selectRequestLog(db: Database, q: RequestLogQuery): Promise<RequestLogRow[]> {
  const rest = [q.statusMin, q.statusMax, q.pathContains, q.upTo.at, q.upTo.id, q.limit];
  if (q.keyId) return db.prepared('request_log_by_key', BY_KEY, [q.shopId, q.keyId, ...rest]);
  if (q.grantId) return db.prepared('request_log_by_grant', BY_GRANT, [q.shopId, q.grantId, ...rest]);
  return db.prepared('request_log_by_shop', BY_SHOP, [q.shopId, ...rest]);
}

/**
 * Deletes up to `limit` rows older than `cutoff` (found through the BRIN index on `at`, deleted by their physical
 * address): one bounded statement. Returns how many it deleted.
 */
export async function deleteRequestLogBefore(run: RunSql, cutoff: Date, limit: number): Promise<number> {
  const rows = await run<{ n: number }>(
    `WITH gone AS (
       DELETE FROM request_log WHERE ctid = ANY (ARRAY (SELECT ctid FROM request_log WHERE at < $1 LIMIT $2)) RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}
