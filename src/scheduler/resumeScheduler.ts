import type { ServiceContext } from '../services/context.js';
import { resumeDueContracts } from '../services/resumeDueContracts.js';

export type SchedulerLog = { info(obj: object, msg: string): void; error(obj: object, msg: string): void };

/**
 * The resume sweep: every `intervalMs` it resumes paused contracts whose `resumeAt` has passed. Any number of
 * instances may run one (rows are claimed with SKIP LOCKED); the first tick after a start catches up on whatever
 * was missed while no instance ran. Time comes from the injected clock, so tests call tick() instead of waiting.
 */
export class ResumeScheduler {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  /** Totals since start, for /metrics. */
  readonly stats = { ticks: 0, resumed: 0, failures: 0, lastLagMs: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: { intervalMs: number; batchSize?: number; log?: SchedulerLog },
  ) {}

  /** One sweep: resumes everything due, batch after batch. Returns how many contracts it resumed. */
  async tick(): Promise<number> {
    const batch = this.opts.batchSize ?? 200;
    let total = 0;
    for (;;) {
      const { resumed, maxLagMs } = await resumeDueContracts({ ctx: this.ctx, input: { limit: batch } });
      total += resumed;
      if (resumed) this.stats.lastLagMs = maxLagMs;
      if (resumed < batch) break;
    }
    this.stats.ticks++;
    this.stats.resumed += total;
    if (total) this.opts.log?.info({ resumed: total, lagMs: this.stats.lastLagMs }, 'scheduled resumes');
    return total;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.running = this.tick().catch((err) => {
        this.stats.failures++;
        this.opts.log?.error({ err: { message: (err as Error).message } }, 'resume sweep failed; retrying next tick');
      });
      await this.running;
      this.running = null;
      if (!this.stopped) this.timer = setTimeout(loop, this.opts.intervalMs);
    };
    void loop();
  }

  /** Stops scheduling and waits for a sweep in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
