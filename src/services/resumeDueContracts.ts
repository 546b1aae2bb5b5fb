import { and, asc, eq, lte, sql } from 'drizzle-orm';
import { contracts } from '../db/schema.js';
import type { ServiceCall } from './context.js';
import { writeTransitions } from './contractStore.js';

/**
 * Resumes paused contracts whose `resumeAt` has passed, oldest first, up to `limit`. Rows are taken with
 * FOR UPDATE SKIP LOCKED and re-checked under the lock, so any number of sweepers (and the lazy resume on reads)
 * resume each contract exactly once. Catches up on whatever a stopped process missed. Returns how many it resumed
 * and how late the oldest was. `wait` (used by reads) waits for rows another sweeper holds instead of skipping
 * them, so the caller sees them resumed.
 */
export async function resumeDueContracts({
  ctx,
  input,
}: ServiceCall<{ limit?: number; shopId?: string; wait?: boolean }>): Promise<{ resumed: number; maxLagMs: number }> {
  const now = ctx.clock.now();
  return ctx.db.orm.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(contracts)
      .where(
        and(
          eq(contracts.status, 'PAUSED'),
          lte(contracts.resumeAt, now),
          input.shopId ? eq(contracts.shopId, input.shopId) : sql`true`,
        ),
      )
      .orderBy(asc(contracts.resumeAt))
      .limit(input.limit ?? 200)
      .for('update', input.wait ? {} : { skipLocked: true });
    let maxLagMs = 0;
    for (const row of due) {
      maxLagMs = Math.max(maxLagMs, now.getTime() - row.resumeAt!.getTime());
      await writeTransitions(tx, row, [], now);
    }
    return { resumed: due.length, maxLagMs };
  });
}
