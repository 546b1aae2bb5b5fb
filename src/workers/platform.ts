import type { Shopify } from '../platform/shopify/index.js';
import { Worker, type WorkerLog } from './worker.js';

/**
 * Processes the platform's stored webhooks (platform mode): woken by each delivery received on this instance, and
 * on a timer for the rest (another instance's, a retry that came due).
 */
export class PlatformInboxWorker extends Worker {
  readonly stats = { processed: 0 };
  constructor(
    private readonly shopify: Shopify,
    opts: { intervalMs?: number; log?: WorkerLog } = {},
  ) {
    super('platform webhook processing', opts.intervalMs ?? 1000, opts.log);
  }

  async tick(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.shopify.inbox.processDue();
      total += n;
      if (n < 50) break;
    }
    this.stats.processed += total;
    return total;
  }
}

/**
 * Reconciliation (platform mode): every PLATFORM_SYNC_INTERVAL_MS, each installed shop's contracts updated since the
 * last sweep are read again; an import a stopped process left unfinished is taken over here too.
 */
export class ReconcileWorker extends Worker {
  readonly stats = { sweeps: 0, changed: 0, failures: 0 };
  constructor(
    private readonly shopify: Shopify,
    opts: { intervalMs: number; log?: WorkerLog },
  ) {
    super('platform reconciliation', opts.intervalMs, opts.log);
  }

  async tick(): Promise<number> {
    let changed = 0;
    for (const shop of await this.shopify.reconciler.installedShops()) {
      try {
        await this.shopify.installer.continueInstall(shop);
        const r = await this.shopify.reconciler.syncShop(shop);
        changed += r.created + r.changed;
      } catch (err) {
        // One shop's outage does not hold up the others; it is read again next sweep.
        this.stats.failures++;
        this.log?.error({ shop: shop.domain, err: { message: (err as Error).message } }, 'platform reconciliation failed for a shop');
      }
    }
    this.stats.sweeps++;
    this.stats.changed += changed;
    if (changed) this.log?.info({ changed }, 'platform reconciliation applied changes');
    return changed;
  }
}
