import type { KeyState } from '../../db/contractRows.js';
import { AUTH_ERRORS, AuthError, LAST_USED_PRECISION_MS } from '../authenticateApiKey.js';
import { CONNECTION, permissionsFrom, RESOURCES, type Permissions } from '../../domain/permissions.js';
import type { ServiceContext } from '../context.js';
import type { ShopPrincipal } from '../principal.js';
import { shopApiAccess } from '../shops.js';

/**
 * What never changes about an access token once issued: the grant and shop it belongs to, the resource it is for,
 * when it expires. Safe to cache (the grant's state, which decides whether it may act, is not).
 */
export type KnownToken = { grantId: string; shopId: string; resource: string; expiresAtMs: number };

type TokenRow = KeyState & { kind: string; expiresAt: Date; grantId: string; shopId: string; resource: string; lastUsedAt: Date | null };

// The token by its digest, its grant, its shop: one indexed read, for a token this process has not seen before.
const TOKEN = `
  SELECT t.kind, t.expires_at AS "expiresAt", g.id::text AS "grantId", g.shop_id::text AS "shopId", g.resource, g.permissions,
         g.revoked_at AS "revokedAt", g.last_used_at AS "lastUsedAt", 'custom' AS access, s.plan,
         s.uninstalled_at IS NOT NULL AS uninstalled
    FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN shops s ON s.id = g.shop_id
   WHERE t.digest = $1`;

/** 401 for a token that is not (or no longer) an access token of a live grant for this resource. */
export const INVALID_TOKEN = new AuthError('unknown', 'The access token is invalid, expired or revoked. Refresh it, or connect the app again.');

const NONE = Object.fromEntries(RESOURCES.map((r) => [r, 'none'])) as Permissions;

/** A grant's permissions as stored (every resource written when it was approved; anything unreadable is none). */
export const grantPermissions = (stored: unknown): Permissions => permissionsFrom(stored, NONE);

/**
 * A grant's state as a request reads it (grantRows, or fused with a contract read): throws the refusal of
 * docs/product.md §2, in the order a key's is checked (gone or ended → 401, app uninstalled → 403, plan → 403).
 */
export function assertGrantUsable(ctx: ServiceContext, state: KeyState | undefined | null): void {
  if (!state || state.revokedAt) throw INVALID_TOKEN;
  if (state.uninstalled) throw AUTH_ERRORS.app_not_installed;
  if (!shopApiAccess(ctx, state.plan).allowed) throw AUTH_ERRORS.plan_required;
}

/** Whether a known token may be presented now, here: unexpired, and for this resource (RFC 8707). */
export const tokenFits = (ctx: ServiceContext, t: KnownToken, resource: string): boolean => t.expiresAtMs > ctx.clock.now().getTime() && t.resource === resource;

/** Notes a connection's use, unless a request (on any instance) did within the last minute; never rejects. */
export async function touchGrantLastUsed(ctx: ServiceContext, grantId: string): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db
    .prepared('svc_oauth_grant_used', `UPDATE oauth_grants SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`, [
      grantId,
      now,
      new Date(now.getTime() - LAST_USED_PRECISION_MS),
    ])
    .catch((err: unknown) => ctx.warn?.({ err }, 'could not record a connection’s last use'));
}

/**
 * Access tokens this process has seen, by digest: what never changes about them (grant, shop, resource, expiry), as
 * KeyCache keeps keys, so a connection's request reads its grant's state with its first contract read, in one
 * statement. Bounded, oldest first out; the grant's state is never cached.
 */
export class TokenCache {
  private readonly entries = new Map<string, { token: KnownToken; lastUsedAt: number }>();
  constructor(private readonly maxEntries = 10_000) {}

  remember(digest: string, token: KnownToken, lastUsedAt: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, { token, lastUsedAt });
  }

  find(digest: string): KnownToken | null {
    return this.entries.get(digest)?.token ?? null;
  }

  forget(digest: string): void {
    this.entries.delete(digest);
  }

  /** A known token's connection acted: notes its use if this process last did a minute ago or more (else null). */
  noteUse(ctx: ServiceContext, digest: string): Promise<void> | null {
    const hit = this.entries.get(digest);
    const now = ctx.clock.now().getTime();
    if (!hit || now - hit.lastUsedAt < LAST_USED_PRECISION_MS) return null;
    hit.lastUsedAt = now;
    return touchGrantLastUsed(ctx, hit.token.grantId);
  }
}

/**
 * An OAuth access token presented to /mcp that this process has not seen, looked up by its digest and checked in the
 * order of docs/product.md §2: an access token, unexpired, of a grant not ended, for this resource (`resource` is
 * /mcp's URL) → 401; the app installed → 403; the plan → 403. `identified` is told the token's facts before it is
 * judged (the request log records refusals of a known connection; the gate caches them).
 */
export async function authenticateAccessToken(
  ctx: ServiceContext,
  digest: string,
  resource: string,
  identified?: (t: KnownToken) => void,
): Promise<{ principal: ShopPrincipal; token: KnownToken; lastUsedAt: number }> {
  const [row] = await ctx.db.prepared<TokenRow>('svc_oauth_access_token', TOKEN, [digest]);
  if (!row || row.kind !== 'access') throw INVALID_TOKEN;
  const token: KnownToken = { grantId: row.grantId, shopId: row.shopId, resource: row.resource, expiresAtMs: row.expiresAt.getTime() };
  identified?.(token);
  if (!tokenFits(ctx, token, resource)) throw INVALID_TOKEN;
  assertGrantUsable(ctx, row);
  let lastUsedAt = row.lastUsedAt?.getTime() ?? -Infinity;
  const now = ctx.clock.now().getTime();
  if (now - lastUsedAt >= LAST_USED_PRECISION_MS) {
    await touchGrantLastUsed(ctx, row.grantId);
    lastUsedAt = now;
  }
  const principal: ShopPrincipal = {
    kind: 'shop',
    shopId: row.shopId,
    actor: { type: 'oauth', id: row.grantId },
    permissions: grantPermissions(row.permissions),
    who: CONNECTION,
  };
  return { principal, token, lastUsedAt };
}
