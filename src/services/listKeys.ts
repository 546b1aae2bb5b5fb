import { desc, eq } from 'drizzle-orm';
import { apiKeys } from '../db/schema.js';
import { toApiKey, type ApiKey } from '../domain/resources.js';
import type { ServiceCall } from './context.js';

/** All of a shop's keys, revoked ones included, newest first (as Settings → API shows a key it just made: at the top). Never the secret: it is not stored. */
export async function listKeys({ ctx, input }: ServiceCall<{ shopId: string }>): Promise<{ keys: ApiKey[]; activeCount: number }> {
  const rows = await ctx.db.orm.select().from(apiKeys).where(eq(apiKeys.shopId, input.shopId)).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
  const keys = rows.map(toApiKey);
  return { keys, activeCount: keys.filter((k) => k.status === 'active').length };
}
