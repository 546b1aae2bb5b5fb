import type { ServiceContext } from '../services/context.js';
import { purgeExpiredIdempotencyKeys } from '../services/purgeExpiredIdempotencyKeys.js';
import { Worker, type WorkerLog } from './worker.js';

/**
 * Deletes expired idempotency keys every `intervalMs` (default 10 minutes). Correctness does not depend on it (the
 * claim ignores expired rows); it keeps the table at about one day of keys.
 */
export class IdempotencyCleanup extends Worker {
  readonly stats = { runs: 0, deleted: 0, failures: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    opts: { intervalMs?: number; log?: WorkerLog } = {},
  ) {
    super('idempotency key cleanup', opts.intervalMs ?? 10 * 60_000, opts.log);
  }

  async tick(): Promise<number> {
    const deleted = await purgeExpiredIdempotencyKeys({ ctx: this.ctx, input: {} }).catch((err) => {
      this.stats.failures++;
      throw err;
    });
    this.stats.runs++;
    this.stats.deleted += deleted;
    if (deleted) this.log?.info({ deleted }, 'expired idempotency keys deleted');
    return deleted;
  }
}
