import type { Shopify } from '../platform/shopify/index.js';
import { pollPendingAttempts } from '../platform/shopify/billing.js';
import type { ServiceContext } from '../services/context.js';
import { INBOX_BATCH } from '../services/webhookInbox.js';
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

  private wakePending: NodeJS.Timeout | null = null;

  async tick(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.shopify.inbox.processDue();
      total += n;
      if (n < INBOX_BATCH / 2) break;
    }
    this.stats.processed += total;
    return total;
  }

  /**
   * A delivery was stored: process soon, not at once. Deliveries arriving meanwhile go in one round, and the
   * platform's echo of svc's own action, which often arrives before the action has committed, finds it committed
   * (and needs no read) instead of being put off.
   */
  wakeSoon(): void {
    if (this.wakePending) return;
    this.wakePending = setTimeout(() => {
      this.wakePending = null;
      this.wake();
    }, WAKE_DELAY_MS);
  }

  override async stop(): Promise<void> {
    if (this.wakePending) clearTimeout(this.wakePending);
    this.wakePending = null;
    await super.stop();
  }
}

/** How long after a delivery arrives the inbox is processed. */
const WAKE_DELAY_MS = 100;

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

/**
 * Billing attempts still pending ten minutes after they were handed to the platform (their webhook late or lost, or
 * a challenge the buyer has not answered) are read from the platform every `intervalMs` (default a minute), and the
 * outcome of each one settled there is recorded.
 */
export class PendingAttemptsWorker extends Worker {
  readonly stats = { rounds: 0, recorded: 0 };
  constructor(
    private readonly ctx: ServiceContext,
    private readonly shopify: Shopify,
    opts: { intervalMs?: number; log?: WorkerLog } = {},
  ) {
    super('platform billing attempts', opts.intervalMs ?? 60_000, opts.log);
  }

  async tick(): Promise<number> {
    const n = await pollPendingAttempts(this.ctx, this.shopify.admin, this.log);
    this.stats.rounds++;
    this.stats.recorded += n;
    return n;
  }
}
