import { and, eq, isNull } from 'drizzle-orm';
import { apiKeys } from '../db/schema.js';
import { ServiceError } from '../domain/errors.js';
import { isUuid } from '../domain/ids.js';
import type { Permissions } from '../domain/permissions.js';
import { toApiKey, type ApiKey } from '../domain/resources.js';
import type { ServiceCall } from './context.js';
import { permissionColumns } from './generateKey.js';

const notFound = () => new ServiceError('not_found', 'No API key with this id exists for this shop.');

/**
 * Sets an active key's permissions. They hold from the very next request on every instance, as a revocation does:
 * no instance keeps a key's state (services/authenticateApiKey.ts KeyCache holds ids only), every request reads it.
 * Allowed whatever the shop's plan (narrowing a key must never wait for an upgrade). A revoked key's permissions
 * no longer mean anything and cannot change: 409 invalid_state.
 */
export async function updateKeyPermissions({ ctx, input }: ServiceCall<{ shopId: string; keyId: string; permissions: Permissions }>): Promise<ApiKey> {
  if (!isUuid(input.keyId)) throw notFound();
  const [updated] = await ctx.db.orm
    .update(apiKeys)
    .set(permissionColumns(input.permissions))
    .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.shopId, input.shopId), isNull(apiKeys.revokedAt)))
    .returning();
  if (updated) return toApiKey(updated);
  const [existing] = await ctx.db.orm
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, input.keyId), eq(apiKeys.shopId, input.shopId)));
  if (!existing) throw notFound();
  throw new ServiceError('invalid_state', 'This API key is revoked: its permissions can no longer change. Generate a new key instead.');
}
