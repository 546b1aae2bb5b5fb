import { and, count, eq, isNull } from 'drizzle-orm';
import { apiKeys, shops } from '../db/schema.js';
import { MAX_ACTIVE_KEYS } from '../domain/access.js';
import { invalidRequest, MESSAGES, ServiceError } from '../domain/errors.js';
import { keyDigest, newRawKey } from '../domain/keys.js';
import { PRESETS, presetOf, type Permissions } from '../domain/permissions.js';
import { toApiKey, type ApiKey, type KeyAccess } from '../domain/resources.js';
import type { ServiceCall } from './context.js';
import { shopApiAccess } from './shops.js';

/** What a key's row stores of its permissions: all of them, and the preset they equal (or custom). */
export const permissionColumns = (permissions: Permissions) => ({ permissions: { ...permissions }, access: presetOf(permissions) });

/**
 * Creates an API key for a shop with the permissions asked for, given as a preset (`access`) or one by one
 * (`permissions`), not both; read_write when neither. The raw key is returned once, here, and never again: only its
 * SHA-256 digest is stored. The shop row is locked while the active keys are counted, so the limit of 5 holds under concurrent
 * requests and across instances sharing one PostgreSQL.
 */
export async function generateKey({
  ctx,
  input,
}: ServiceCall<{ shopId: string; name?: string | null; access?: KeyAccess; permissions?: Permissions }>): Promise<{ key: ApiKey; secret: string }> {
  const name = input.name?.trim() || null;
  if (input.access !== undefined && input.permissions !== undefined) {
    throw invalidRequest('Give the key either access (a preset: read_write or read_only) or permissions (one level per resource), not both.', [
      { path: 'permissions', message: 'not allowed together with access' },
    ]);
  }
  const permissions = input.permissions ?? PRESETS[input.access ?? 'read_write'];
  if (name !== null && name.length > 100) throw invalidRequest('The key name must be at most 100 characters.', [{ path: 'name', message: 'at most 100 characters' }]);
  return ctx.db.orm.transaction(async (tx) => {
    const [shop] = await tx.select({ plan: shops.plan }).from(shops).where(eq(shops.id, input.shopId)).for('update');
    if (!shop) throw new ServiceError('not_found', 'Shop not found.');
    if (!shopApiAccess(ctx, shop.plan).allowed) throw new ServiceError('plan_required', MESSAGES.planRequired);
    const [{ active }] = await tx
      .select({ active: count() })
      .from(apiKeys)
      .where(and(eq(apiKeys.shopId, input.shopId), isNull(apiKeys.revokedAt)));
    if (active >= MAX_ACTIVE_KEYS) {
      throw new ServiceError(
        'key_limit_reached',
        `This shop already has ${MAX_ACTIVE_KEYS} active API keys, the maximum. Revoke one before generating another.`,
      );
    }
    const secret = newRawKey();
    const [row] = await tx
      .insert(apiKeys)
      .values({ shopId: input.shopId, name, ...permissionColumns(permissions), digest: keyDigest(secret), createdAt: ctx.clock.now() })
      .returning();
    return { key: toApiKey(row), secret };
  });
}
