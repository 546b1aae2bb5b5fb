import { and, inArray, lte, sql } from 'drizzle-orm';
import { idempotencyKeys } from '../db/schema.js';
import type { ServiceCall } from './context.js';

/**
 * Deletes idempotency keys past their expiry, at most `limit` rows per statement so a large backlog never holds
 * long locks; repeats until a batch comes back short. Expired rows are already ignored by the claim, so this only
 * keeps the table small; any number of instances may run it at once. Returns how many rows it deleted.
 */
export async function purgeExpiredIdempotencyKeys({ ctx, input }: ServiceCall<{ limit?: number }>): Promise<number> {
  const limit = input.limit ?? 1000;
  const now = ctx.clock.now();
  let total = 0;
  for (;;) {
    const batch = ctx.db.orm
      .select({ shopId: idempotencyKeys.shopId, keyDigest: idempotencyKeys.keyDigest })
      .from(idempotencyKeys)
      .where(lte(idempotencyKeys.expiresAt, now))
      .limit(limit);
    const deleted = await ctx.db.orm
      .delete(idempotencyKeys)
      .where(
        and(
          lte(idempotencyKeys.expiresAt, now),
          inArray(sql`(${idempotencyKeys.shopId}, ${idempotencyKeys.keyDigest})`, batch),
        ),
      )
      .returning({ shopId: idempotencyKeys.shopId });
    total += deleted.length;
    if (deleted.length < limit) return total;
  }
}
