import { and, asc, eq, lte, sql } from 'drizzle-orm';
import { CONTRACT_ROW, contracts } from '../db/schema.js';
import { SYSTEM } from './principal.js';
import { runCommand } from './runner.js';
import type { ServiceCall } from './context.js';

/**
 * Resumes paused contracts whose `resumeAt` has passed, oldest first, up to `limit`, each through the runner:
 * concurrent resumes go out as one batched write, and a contract that another writer changed meanwhile is planned
 * again under its lock, where it is no longer due. So any number of sweepers (and the lazy resume on reads) resume
 * each contract exactly once. Catches up on whatever a stopped process missed. `wait` (reads) waits for a contract
 * another writer holds instead of skipping it, so the caller sees it resumed. Returns how many were due (read, at
 * most `limit`), how many of those it resumed (the rest another writer resumed or holds), and how late the oldest was.
 */
export async function resumeDueContracts({
  ctx,
  input,
}: ServiceCall<{ limit?: number; shopId?: string; wait?: boolean }>): Promise<{ due: number; resumed: number; maxLagMs: number }> {
  const now = ctx.clock.now();
  const due = await ctx.db.orm
    .select(CONTRACT_ROW)
    .from(contracts)
    .where(and(eq(contracts.status, 'PAUSED'), lte(contracts.resumeAt, now), input.shopId ? eq(contracts.shopId, input.shopId) : sql`true`))
    .orderBy(asc(contracts.resumeAt))
    .limit(input.limit ?? 200);
  const results = await Promise.all(
    due.map((row) =>
      runCommand(ctx, SYSTEM.scheduler, { shopId: row.shopId, contractId: row.id, read: row }, null, { skipLocked: !input.wait }).then((r) =>
        r?.changed ? now.getTime() - row.resumeAt!.getTime() : null,
      ),
    ),
  );
  const lags = results.filter((lag): lag is number => lag !== null);
  return { due: due.length, resumed: lags.length, maxLagMs: lags.length ? Math.max(...lags) : 0 };
}
