import type { ServiceContext } from '../services/context.js';
import { IdempotencyCleanup } from './idempotencyCleanup.js';
import { ResumeSweep } from './resumeSweep.js';
import type { WorkerLog } from './worker.js';

/**
 * Every piece of background work of one instance, started and stopped together (main.ts). Add a worker here (the
 * webhook dispatcher, platform reconciliation) and it runs wherever SCHEDULER_ENABLED is on.
 */
export function createWorkers(ctx: ServiceContext, opts: { resumeIntervalMs: number; log?: WorkerLog }) {
  const resumeSweep = new ResumeSweep(ctx, { intervalMs: opts.resumeIntervalMs, log: opts.log });
  const idempotencyCleanup = new IdempotencyCleanup(ctx, { log: opts.log });
  const all = [resumeSweep, idempotencyCleanup];
  return {
    resumeSweep,
    idempotencyCleanup,
    start: () => all.forEach((w) => w.start()),
    stop: () => Promise.all(all.map((w) => w.stop())).then(() => undefined),
  };
}
