import type { ServiceContext } from '../services/context.js';
import { purgeExpiredRequestLog } from '../services/purgeExpiredRequestLog.js';
import { Worker, type WorkerLog } from './worker.js';

/**
 * Deletes logged requests older than 14 days every `intervalMs` (default 10 minutes), in bounded batches
 * (services/purgeExpiredRequestLog.ts).
 */
export class RequestLogCleanup extends Worker {
  readonly stats = { runs: 0, deleted: 0, failures: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    opts: { intervalMs?: number; batchSize?: number; log?: WorkerLog } = {},
  ) {
    super('request log cleanup', opts.intervalMs ?? 10 * 60_000, opts.log);
    this.batchSize = opts.batchSize;
  }
  private readonly batchSize?: number;

  async tick(): Promise<number> {
    const deleted = await purgeExpiredRequestLog({ ctx: this.ctx, input: { limit: this.batchSize } }).catch((err) => {
      this.stats.failures++;
      throw err;
    });
    this.stats.runs++;
    this.stats.deleted += deleted;
    if (deleted) this.log?.info({ deleted }, 'request log entries older than 14 days deleted');
    return deleted;
  }
}
