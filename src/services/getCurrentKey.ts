import { and, eq } from 'drizzle-orm';
import { apiKeys, shops } from '../db/schema.js';
import { ServiceError } from '../domain/errors.js';
import { fingerprintOf } from '../domain/keys.js';
import { presetOf } from '../domain/permissions.js';
import type { CurrentKey } from '../domain/resources.js';
import type { ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';

/**
 * What the calling key is (GET /api/v1/key): its id, name, fingerprint, its permissions as this request was judged
 * by, and its shop. Any key may read it, whatever its permissions: a client (`svc mcp-stdio`, say) learns at start
 * whether its key works and what it may do, without trying an operation.
 */
export async function getCurrentKey(ctx: ServiceContext, principal: ShopPrincipal): Promise<CurrentKey> {
  const [row] = principal.keyId
    ? await ctx.db.orm
        .select({ id: apiKeys.id, name: apiKeys.name, digest: apiKeys.digest, domain: shops.domain })
        .from(apiKeys)
        .innerJoin(shops, eq(shops.id, apiKeys.shopId))
        .where(and(eq(apiKeys.id, principal.keyId), eq(apiKeys.shopId, principal.shopId)))
    : [];
  if (!row) throw new ServiceError('not_found', 'This request was not made with an API key.');
  return {
    id: row.id,
    name: row.name,
    fingerprint: fingerprintOf(row.digest),
    access: presetOf(principal.permissions),
    permissions: principal.permissions,
    shop: { domain: row.domain },
  };
}
