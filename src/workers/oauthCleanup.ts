import type { ServiceContext } from '../services/context.js';
import { purgeExpiredOAuth } from '../services/oauth/purge.js';
import { Worker, type WorkerLog } from './worker.js';

/** Deletes what OAuth no longer needs (services/oauth/purge.ts) every `intervalMs` (default 10 minutes). */
export class OAuthCleanup extends Worker {
  readonly stats = { runs: 0, deleted: 0, failures: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    opts: { intervalMs?: number; log?: WorkerLog } = {},
  ) {
    super('oauth cleanup', opts.intervalMs ?? 10 * 60_000, opts.log);
  }

  async tick(): Promise<number> {
    const deleted = await purgeExpiredOAuth(this.ctx).catch((err) => {
      this.stats.failures++;
      throw err;
    });
    this.stats.runs++;
    this.stats.deleted += deleted;
    if (deleted) this.log?.info({ deleted }, 'expired OAuth codes, tokens and connections deleted');
    return deleted;
  }
}
