import { claimItems, expirePreviews, hasPendingBesides, jobRow, jobsWithWork, purgeJobs, queueJobEvent, skipPending, startQueued, type BulkJobRow } from '../db/bulkJobRows.js';
import { BULK_JOB_RETENTION_MS, type BulkChange } from '../domain/bulkJobs.js';
import { endJob, toBulkJob } from '../services/bulkJobs.js';
import type { ServiceContext } from '../services/context.js';
import { runBulkItems } from '../services/runBulkItems.js';
import { Worker, type WorkerLog } from './worker.js';

/** Items claimed at once: in standalone mode one transaction's worth (their contracts are locked while it lasts). */
const STANDALONE_BATCH = 100;
/** In platform mode, the contracts in flight at once (paced by the shop's cost bucket) and claimed per round. */
export const PLATFORM_LANES = 8;
const PLATFORM_BATCH = 40;
/** How long a claim keeps other workers off an item, by default: far longer than a batch takes; a killed worker's items wait this long. */
const LEASE_MS = 60_000;
/** A round works at most this long before it lets the loop breathe (and a stop be seen). */
const ROUND_MS = 2_000;

export type BulkJobWorkerOptions = {
  intervalMs: number;
  /** True while requests crowd the instance: the worker gives way (items are not the API's to wait for). */
  busy?: () => boolean;
  /** How long a claim lasts (BULK_JOB_LEASE_MS; LEASE_MS by default). */
  leaseMs?: number;
  /** Tests: a batch size. */
  batchSize?: number;
  log?: WorkerLog;
};

/**
 * Bulk jobs' worker (docs/product.md §15): each round it expires previews not started in time, fails the jobs of a
 * shop that uninstalled the app, starts each shop's next queued job when none of the shop's runs, then works through
 * the items of every previewing or running job a batch at a time: claimed under a lease (SKIP LOCKED, so any number
 * of instances share the work and a killed instance's items are taken over when their lease lapses), run through the
 * command runner (services/runBulkItems.ts), each item's outcome written with its change. A job whose items are all
 * done ends (previewed, or completed) with its event. Between batches it gives way to requests. Jobs and their
 * results are deleted 30 days after they end.
 */
export class BulkJobWorker extends Worker {
  readonly stats = { ticks: 0, items: 0, failures: 0 };
  private lastPurge = 0;
  private more = false;
  private readonly leaseMs: number;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: BulkJobWorkerOptions,
  ) {
    super('bulk jobs', opts.intervalMs, opts.log);
    this.leaseMs = opts.leaseMs ?? LEASE_MS;
  }

  protected nextDelayMs(): number {
    return this.more ? 0 : super.nextDelayMs();
  }

  /** One round: answers how many items it settled. */
  async tick(): Promise<{ settled: number }> {
    const started = Date.now();
    let settled = 0;
    this.more = false;
    try {
      await this.housekeeping();
      for (;;) {
        const jobs = await this.ctx.db.withSession((run) => jobsWithWork(run, 20));
        if (!jobs.length) break;
        let progressed = false;
        for (const job of jobs) {
          if (this.opts.busy?.()) {
            // Requests first: the next round comes back to it.
            this.more = true;
            return { settled };
          }
          const n = await this.step(job);
          if (n > 0) progressed = true;
          settled += n;
        }
        if (!progressed) break;
        if (Date.now() - started > ROUND_MS) {
          this.more = true;
          break;
        }
        await new Promise((r) => setImmediate(r));
      }
    } catch (err) {
      this.stats.failures++;
      throw err;
    } finally {
      this.stats.ticks++;
      this.stats.items += settled;
    }
    return { settled };
  }

  /** Expired previews, jobs of uninstalled shops, queued jobs that may start, and (hourly) the retention. */
  private async housekeeping(): Promise<void> {
    const now = this.ctx.clock.now();
    const expired = await this.ctx.db.transaction(async (run) => {
      const rows = await expirePreviews(run, now);
      for (const row of rows) await queueJobEvent(run, row.shopId, 'bulk_job.finished', { bulkJob: await toBulkJob(run, row) }, now);
      return rows.length;
    });
    if (expired) this.log?.info({ expired }, 'bulk job previews expired');
    await this.failUninstalled();
    await this.ctx.db.withSession((run) => startQueued(run, now));
    if (now.getTime() - this.lastPurge > 3_600_000) {
      this.lastPurge = now.getTime();
      await this.ctx.db.withSession((run) => purgeJobs(run, new Date(now.getTime() - BULK_JOB_RETENTION_MS), 1000));
    }
  }

  /** The unfinished jobs of shops that uninstalled the app end failed, their remaining items skipped. */
  private async failUninstalled(): Promise<void> {
    const jobs = await this.ctx.db.withSession((run) =>
      run<{ id: string; shopId: string }>(
        `SELECT j.id::text AS id, j.shop_id::text AS "shopId" FROM bulk_jobs j JOIN shops s ON s.id = j.shop_id
          WHERE s.uninstalled_at IS NOT NULL AND j.status IN ('previewing', 'previewed', 'queued', 'running')`,
      ),
    );
    for (const j of jobs) await this.failNotInstalled(j);
  }

  /** A job of a shop whose app is uninstalled ends failed, its remaining items skipped (app_not_installed). */
  private async failNotInstalled(j: { id: string; shopId: string }): Promise<void> {
    const now = this.ctx.clock.now();
    const message = 'The shop uninstalled the app: the job cannot go on.';
    // In-flight items too: without the shop's token the platform refuses them anyway.
    const row = await this.ctx.db.withSession(async (run) => {
      await skipPending(run, j.id, new Date(now.getTime() + this.leaseMs), 'app_not_installed', message);
      return jobRow(run, j.shopId, j.id);
    });
    if (row) await endJob(this.ctx, row, 'failed', { failure: message });
  }

  /** One batch of one job: claimed, run, and the job ended when nothing is left. Answers the items settled. */
  private async step(job: BulkJobRow): Promise<number> {
    const now = this.ctx.clock.now();
    const platform = this.ctx.platform.callsOut;
    const until = new Date(now.getTime() + this.leaseMs);
    const limit = this.opts.batchSize ?? (platform ? PLATFORM_BATCH : STANDALONE_BATCH);
    const claimed = await claimItems(this.ctx.db, job.id, { now, until, limit });
    const ids = claimed.map((c) => c.id);
    const othersPending = () => this.ctx.db.withSession((run) => hasPendingBesides(run, job.id, ids));
    if (!claimed.length) {
      // Nothing pending at all: the job is done. (Items another worker holds, or waiting on billing, come back.)
      if (!(await othersPending())) await endJob(this.ctx, job, job.status === 'previewing' ? 'previewed' : 'completed');
      return 0;
    }
    // The rest of the job done, a contract still being billed after one wait gets its last try.
    const waited = claimed.filter((c) => c.waited).map((c) => c.id);
    const lastTry = new Set(waited.length && !(await othersPending()) ? waited : []);
    const done = await runBulkItems(this.ctx, {
      jobId: job.id,
      shopId: job.shopId,
      change: job.change as BulkChange,
      contractIds: ids,
      lease: until,
      preview: job.status === 'previewing',
      lastTry,
      lanes: PLATFORM_LANES,
    });
    // The platform refused the shop's token: the job ends as an uninstall's does, before its webhook comes.
    if (done.notInstalled) await this.failNotInstalled(job);
    return done.settled;
  }
}
