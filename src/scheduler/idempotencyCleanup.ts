import type { ServiceContext } from '../services/context.js';
import { purgeExpiredIdempotencyKeys } from '../services/purgeExpiredIdempotencyKeys.js';
import type { SchedulerLog } from './resumeScheduler.js';

/**
 * Deletes expired idempotency keys every `intervalMs` (default 10 minutes). Correctness does not depend on it (the
 * claim ignores expired rows); it keeps the table at about one day of keys. Time comes from the injected clock, so
 * tests move the clock and call tick().
 */
export class IdempotencyCleanup {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  readonly stats = { runs: 0, deleted: 0, failures: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: { intervalMs?: number; log?: SchedulerLog } = {},
  ) {}

  async tick(): Promise<number> {
    const deleted = await purgeExpiredIdempotencyKeys({ ctx: this.ctx, input: {} });
    this.stats.runs++;
    this.stats.deleted += deleted;
    if (deleted) this.opts.log?.info({ deleted }, 'expired idempotency keys deleted');
    return deleted;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.tick()
        .catch((err) => {
          this.stats.failures++;
          this.opts.log?.error({ err: { message: (err as Error).message } }, 'idempotency key cleanup failed; retrying next run');
        })
        .finally(() => {
          this.running = null;
        });
    }, this.opts.intervalMs ?? 10 * 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
