import { and, eq, isNull } from 'drizzle-orm';
import { apiKeys } from '../db/schema.js';
import { ServiceError } from '../domain/errors.js';
import { isUuid } from '../domain/ids.js';
import { toApiKey, type ApiKey } from '../domain/resources.js';
import type { ServiceCall } from './context.js';


/**
 * Revokes a key at once: every authentication reads the key row, so the next request with it fails on every
 * instance. Revoking a revoked key succeeds and changes nothing. Allowed whatever the shop's plan.
 */
export async function revokeKey({ ctx, input }: ServiceCall<{ shopId: string; keyId: string }>): Promise<ApiKey> {
  if (!isUuid(input.keyId)) throw new ServiceError('not_found', 'No API key with this id exists for this shop.');
  const [revoked] = await ctx.db.orm
    .update(apiKeys)
    .set({ revokedAt: ctx.clock.now(), revokedReason: 'revoked' })
    .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.shopId, input.shopId), isNull(apiKeys.revokedAt)))
    .returning();
  if (revoked) return toApiKey(revoked);
  const [existing] = await ctx.db.orm
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.shopId, input.shopId)));
  if (!existing) throw new ServiceError('not_found', 'No API key with this id exists for this shop.');
  return toApiKey(existing);
}
