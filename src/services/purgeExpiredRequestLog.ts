import { deleteRequestLogBefore } from '../db/requestLog.js';
import { REQUEST_LOG_RETENTION_MS } from '../domain/requestLog.js';
import type { ServiceCall } from './context.js';

/**
 * Deletes logged requests older than the retention (14 days), at most `limit` rows per statement so a large backlog
 * never holds long locks or a long transaction; repeats until a batch comes back short. Any number of instances may
 * run it at once. Returns how many rows it deleted.
 */
export async function purgeExpiredRequestLog({ ctx, input }: ServiceCall<{ limit?: number }>): Promise<number> {
  const limit = input.limit ?? 5000;
  const cutoff = new Date(ctx.clock.now().getTime() - REQUEST_LOG_RETENTION_MS);
  let total = 0;
  for (;;) {
    const deleted = await ctx.db.withSession((run) => deleteRequestLogBefore(run, cutoff, limit));
    total += deleted;
    if (deleted < limit) return total;
  }
}
