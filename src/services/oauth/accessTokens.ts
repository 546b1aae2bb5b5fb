import { AUTH_ERRORS, AuthError, LAST_USED_PRECISION_MS } from '../authenticateApiKey.js';
import { CONNECTION, permissionsFrom, RESOURCES, type Permissions } from '../../domain/permissions.js';
import type { ServiceContext } from '../context.js';
import type { ShopPrincipal } from '../principal.js';
import { shopApiAccess } from '../shops.js';

/** What the request log and the gate know of a connection once its token is found. */
export type KnownGrant = { grantId: string; shopId: string; clientName: string };

type TokenRow = {
  kind: string;
  expiresAt: Date;
  grantId: string;
  shopId: string;
  resource: string;
  permissions: unknown;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  clientName: string;
  plan: string;
  uninstalled: boolean;
};

// One indexed read per request, as a key's state is read: the token by its digest, its grant, its shop.
const TOKEN = `
  SELECT t.kind, t.expires_at AS "expiresAt", g.id::text AS "grantId", g.shop_id::text AS "shopId", g.resource, g.permissions,
         g.revoked_at AS "revokedAt", g.last_used_at AS "lastUsedAt", g.client_name AS "clientName", s.plan,
         s.uninstalled_at IS NOT NULL AS uninstalled
    FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN shops s ON s.id = g.shop_id
   WHERE t.digest = $1`;

/** 401 for a token that is not (or no longer) an access token of a live grant for this resource. */
export const INVALID_TOKEN = new AuthError('unknown', 'The access token is invalid, expired or revoked. Refresh it, or connect the app again.');

const NONE = Object.fromEntries(RESOURCES.map((r) => [r, 'none'])) as Permissions;

/**
 * An OAuth access token presented to /mcp, checked in the order of docs/product.md §2: found by its digest, an access
 * token, unexpired, of a grant not ended, for this resource (RFC 8707: `resource` is /mcp's URL) → 401; the app
 * installed → 403; the plan → 403. Nothing is cached: a disconnect holds from the very next request, everywhere.
 * `identified` is told the grant before it is judged (the request log records refusals of a known connection).
 */
export async function authenticateAccessToken(
  ctx: ServiceContext,
  digest: string,
  resource: string,
  identified?: (g: KnownGrant) => void,
): Promise<{ principal: ShopPrincipal; grant: KnownGrant }> {
  const [row] = await ctx.db.prepared<TokenRow>('svc_oauth_access_token', TOKEN, [digest]);
  if (!row || row.kind !== 'access') throw INVALID_TOKEN;
  const grant: KnownGrant = { grantId: row.grantId, shopId: row.shopId, clientName: row.clientName };
  identified?.(grant);
  const now = ctx.clock.now();
  if (row.revokedAt || row.expiresAt.getTime() <= now.getTime() || row.resource !== resource) throw INVALID_TOKEN;
  if (row.uninstalled) throw AUTH_ERRORS.app_not_installed;
  if (!shopApiAccess(ctx, row.plan).allowed) throw AUTH_ERRORS.plan_required;
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_PRECISION_MS) {
    // At most about once a minute per connection, never awaited: a failed note costs the request nothing.
    const cutoff = new Date(now.getTime() - LAST_USED_PRECISION_MS);
    ctx.db
      .prepared('svc_oauth_grant_used', `UPDATE oauth_grants SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`, [row.grantId, now, cutoff])
      .catch((err: unknown) => ctx.warn?.({ err }, 'could not record a connection’s last use'));
  }
  const principal: ShopPrincipal = {
    kind: 'shop',
    shopId: row.shopId,
    actor: { type: 'oauth', id: row.grantId },
    permissions: permissionsFrom(row.permissions, NONE),
    who: CONNECTION,
  };
  return { principal, grant };
}
