import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Orm } from '../db/client.js';
import { apiKeys, shops } from '../db/schema.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { fingerprintOf, isWellFormedKey, keyDigest } from '../domain/keys.js';
import type { ServiceCall } from './context.js';
import { shopApiAccess } from './shops.js';

export type AuthenticatedKey = { keyId: string; shopId: string; fingerprint: string };

/** last_used_at is refreshed at most this often per key, so a busy key does not write on every request. */
export const LAST_USED_PRECISION_MS = 60_000;

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'plan_required';

export class AuthError extends ServiceError {
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(reason === 'plan_required' ? 'plan_required' : 'unauthorized', message);
  }
}

// Runs on every authenticated request: prepared once per database (no query building, no re-planning).
const lookups = new WeakMap<Orm, ReturnType<typeof prepareLookup>>();
function prepareLookup(orm: Orm) {
  return orm
    .select({ id: apiKeys.id, shopId: apiKeys.shopId, revokedAt: apiKeys.revokedAt, lastUsedAt: apiKeys.lastUsedAt, plan: shops.plan })
    .from(apiKeys)
    .innerJoin(shops, eq(shops.id, apiKeys.shopId))
    .where(eq(apiKeys.digest, sql.placeholder('digest')))
    .prepare('svc_key_lookup');
}
function keyLookup(orm: Orm) {
  let q = lookups.get(orm);
  if (!q) lookups.set(orm, (q = prepareLookup(orm)));
  return q;
}

/** The key out of an `Authorization: Bearer <key>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * Checks, in the order PRODUCT §2 fixes: key shape and checksum (no I/O) → lookup by digest through the unique
 * index (unknown or revoked → 401) → the shop's plan (→ 403). The digest is compared by the index, never byte by
 * byte in code.
 */
export async function authenticateApiKey({
  ctx,
  input,
}: ServiceCall<{ authorization: string | undefined }>): Promise<AuthenticatedKey> {
  const raw = bearerToken(input.authorization);
  if (raw === null) throw new AuthError(input.authorization ? 'malformed' : 'missing', input.authorization ? MESSAGES.unauthorized : MESSAGES.missingKey);
  if (!isWellFormedKey(raw)) throw new AuthError('malformed', MESSAGES.unauthorized);
  const digest = keyDigest(raw);
  const [row] = await keyLookup(ctx.db.orm).execute({ digest });
  if (!row) throw new AuthError('unknown', MESSAGES.unauthorized);
  if (row.revokedAt) throw new AuthError('revoked', MESSAGES.unauthorized);
  if (!shopApiAccess(ctx, row.plan).allowed) throw new AuthError('plan_required', MESSAGES.planRequired);

  const now = ctx.clock.now();
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_PRECISION_MS) {
    const cutoff = new Date(now.getTime() - LAST_USED_PRECISION_MS);
    await ctx.db.orm
      .update(apiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, cutoff))))
      .catch((err) => ctx.warn?.({ err }, 'could not record key last use'));
  }
  return { keyId: row.id, shopId: row.shopId, fingerprint: fingerprintOf(digest) };
}
