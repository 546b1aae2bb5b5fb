import type { RunSql } from '../../db/client.js';
import type { ServiceContext } from '../context.js';

const DAY_MS = 24 * 3600 * 1000;
/** A used or expired code stays a day, so a replay soon after still revokes what was issued from it. */
const CODE_KEPT_MS = DAY_MS;
/** An ended connection stays as long as the request log keeps its requests, which show its name. */
const ENDED_GRANT_KEPT_MS = 14 * DAY_MS;
/** A registered client that never got a grant is forgotten after this (open registration must not grow forever). */
const UNUSED_CLIENT_KEPT_MS = 30 * DAY_MS;

/** Deletes up to `limit` rows of `table` matching `where` (parameters $1, $2), by their physical address; the count. */
async function deleteSome(run: RunSql, table: string, where: string, params: unknown[], limit: number): Promise<number> {
  const [r] = await run<{ n: number }>(
    `WITH gone AS (DELETE FROM ${table} WHERE ctid = ANY (ARRAY (SELECT ctid FROM ${table} WHERE ${where} LIMIT ${limit})) RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    params,
  );
  return r?.n ?? 0;
}

/**
 * What OAuth no longer needs, in bounded batches (any number of instances may run it at once): tokens past their
 * expiry; codes a day past theirs; connections whose every token has expired (the app can no longer refresh, so it
 * is no connection), approvals whose code was never exchanged, and connections ended 14 days ago; registered clients
 * that never got a grant in 30 days. Correctness does not depend on it: every check reads expiry and state. Returns
 * how many rows it deleted.
 */
export async function purgeExpiredOAuth(ctx: ServiceContext, limit = 1000): Promise<number> {
  const now = ctx.clock.now();
  const steps: [string, string, unknown[]][] = [
    ['oauth_tokens', 'expires_at <= $1', [now]],
    ['oauth_codes', 'expires_at <= $1', [new Date(now.getTime() - CODE_KEPT_MS)]],
    [
      'oauth_grants',
      `(revoked_at IS NOT NULL AND revoked_at <= $1)
       OR (connected_at IS NULL AND created_at <= $2 AND NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.grant_id = oauth_grants.id))
       OR (revoked_at IS NULL AND connected_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = oauth_grants.id))`,
      [new Date(now.getTime() - ENDED_GRANT_KEPT_MS), new Date(now.getTime() - CODE_KEPT_MS)],
    ],
    [
      'oauth_clients',
      `kind = 'registered' AND created_at <= $1 AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.id)`,
      [new Date(now.getTime() - UNUSED_CLIENT_KEPT_MS)],
    ],
  ];
  let total = 0;
  for (const [table, where, params] of steps) {
    for (;;) {
      const n = await ctx.db.withSession((run) => deleteSome(run, table, where, params, limit));
      total += n;
      if (n < limit) break;
    }
  }
  return total;
}
