import type { ServiceContext } from '../services/context.js';
import { resumeDueContracts } from '../services/resumeDueContracts.js';
import { Worker, type WorkerLog } from './worker.js';

/**
 * The resume sweep: every `intervalMs` it resumes paused contracts whose `resumeAt` has passed, through the change
 * path (so exactly once with any number of instances sweeping, and with every event's consumers). The first round
 * after a start catches up on whatever was missed while no instance ran.
 */
export class ResumeSweep extends Worker {
  /** Totals since start, for /metrics. */
  readonly stats = { ticks: 0, resumed: 0, failures: 0, lastLagMs: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: { intervalMs: number; batchSize?: number; log?: WorkerLog },
  ) {
    super('resume sweep', opts.intervalMs, opts.log);
  }

  /** One sweep: resumes everything due, batch after batch. Returns how many contracts it resumed. */
  async tick(): Promise<number> {
    const batch = this.opts.batchSize ?? 200;
    let total = 0;
    try {
      for (;;) {
        const { due, resumed, maxLagMs } = await resumeDueContracts({ ctx: this.ctx, input: { limit: batch } });
        total += resumed;
        if (resumed) this.stats.lastLagMs = maxLagMs;
        // Done when fewer than a batch were due. A full batch that another sweeper resumed under this one's feet
        // does not end the sweep while this one still made progress: ending on a short count of its own left due
        // contracts to the next interval when several sweepers raced (each resumed part of a batch, all stopped).
        // No progress at all: the rest is held by other writers, which resume it.
        if (due < batch || resumed === 0) break;
      }
    } catch (err) {
      this.stats.failures++;
      throw err;
    }
    this.stats.ticks++;
    this.stats.resumed += total;
    if (total) this.log?.info({ resumed: total, lagMs: this.stats.lastLagMs }, 'scheduled resumes');
    return total;
  }
}
