import type { ServiceContext } from '../services/context.js';
import { IdempotencyCleanup } from './idempotencyCleanup.js';
import { RequestLogCleanup } from './requestLogCleanup.js';
import { OAuthCleanup } from './oauthCleanup.js';
import { ResumeSweep } from './resumeSweep.js';
import { WebhookDispatcher } from './webhookDispatcher.js';
import type { WorkerLog } from './worker.js';
import type { RequestLoad } from '../http/load.js';
import type { Shopify } from '../platform/shopify/index.js';
import { PendingAttemptsWorker, PlatformInboxWorker, ReconcileWorker } from './platform.js';
import { BillingWorker, type BillingWorkerOptions } from './billing.js';
import { BulkJobWorker } from './bulkJobs.js';

const BUSY_REQUESTS_PER_SECOND = 1000;

/**
 * Every piece of background work of one instance, started and stopped together (main.ts). Add a worker here (platform
 * reconciliation, say) and it runs wherever SCHEDULER_ENABLED is on. Each may run on any number of instances.
 */
export function createWorkers(
  ctx: ServiceContext,
  opts: {
    resumeIntervalMs: number;
    webhookIntervalMs?: number;
    webhookTimeoutMs?: number;
    /** How often the bulk-job worker looks for work when it has none (it is also woken when a job is made). */
    bulkJobIntervalMs?: number;
    /** How long the bulk-job worker's claims last (a killed instance's items are taken over after it). */
    bulkJobLeaseMs?: number;
    load?: RequestLoad;
    log?: WorkerLog;
    /** Platform mode: the platform's webhooks are processed, and reconciliation runs every `syncIntervalMs`. */
    shopify?: { services: Shopify; syncIntervalMs: number };
    /** Renewals (BILLING=on): the billing worker, when the context has a gateway. */
    billing?: Omit<BillingWorkerOptions, 'log'>;
  },
) {
  const billing = opts.billing && ctx.billing ? new BillingWorker(ctx, { ...opts.billing, log: opts.log }) : null;
  // Requests come first, and renewals before their webhooks: while requests arrive this fast, or while this
  // instance's billing works through more due contracts than one batch, the dispatcher gives way
  // (webhookDispatcher.ts) and catches up after.
  const requestsBusy = opts.load ? () => opts.load!.busy(BUSY_REQUESTS_PER_SECOND) : () => false;
  const busy = () => requestsBusy() || (billing?.catchingUp ?? false);
  const resumeSweep = new ResumeSweep(ctx, { intervalMs: opts.resumeIntervalMs, log: opts.log });
  const idempotencyCleanup = new IdempotencyCleanup(ctx, { log: opts.log });
  const requestLogCleanup = new RequestLogCleanup(ctx, { log: opts.log });
  const oauthCleanup = new OAuthCleanup(ctx, { log: opts.log });
  const webhookDispatcher = new WebhookDispatcher(ctx, { intervalMs: opts.webhookIntervalMs, timeoutMs: opts.webhookTimeoutMs, busy, log: opts.log });
  // Bulk jobs give way to requests as the dispatcher does, and to a billing storm (renewals have a deadline).
  const bulkJobs = new BulkJobWorker(ctx, { intervalMs: opts.bulkJobIntervalMs ?? 1000, leaseMs: opts.bulkJobLeaseMs, busy, log: opts.log });
  const platformInbox = opts.shopify ? new PlatformInboxWorker(opts.shopify.services, { log: opts.log }) : null;
  const reconcile = opts.shopify ? new ReconcileWorker(opts.shopify.services, { intervalMs: opts.shopify.syncIntervalMs, log: opts.log }) : null;
  // Platform mode with billing on: the attempts whose outcome has not come by webhook are read from the platform.
  const pendingAttempts = opts.shopify && billing ? new PendingAttemptsWorker(ctx, opts.shopify.services, { log: opts.log }) : null;
  const all = [
    resumeSweep,
    idempotencyCleanup,
    requestLogCleanup,
    oauthCleanup,
    webhookDispatcher,
    bulkJobs,
    ...(platformInbox && reconcile ? [platformInbox, reconcile] : []),
    ...(billing ? [billing] : []),
    ...(pendingAttempts ? [pendingAttempts] : []),
  ];
  return {
    resumeSweep,
    idempotencyCleanup,
    requestLogCleanup,
    oauthCleanup,
    webhookDispatcher,
    bulkJobs,
    platformInbox,
    reconcile,
    billing,
    pendingAttempts,
    start: () => all.forEach((w) => w.start()),
    stop: () => Promise.all(all.map((w) => w.stop())).then(() => undefined),
  };
}
