import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { mirrorFields, type PlatformContract } from './contracts.js';
import * as doc from './documents.js';
import type { PlatformContract as MirroredContract } from '../../db/mirror.js';
import { ContractBusy } from '../../services/changeContract.js';
import { staleContracts, syncContracts, syncUnlessBusy } from '../../services/platformSync.js';

/** Re-reads this much before the last sweep: the platform's clock and svc's may differ, and updatedAt is to the second. */
const OVERLAP_MS = 60_000;

export type SyncReport = { shop: string; checked: number; created: number; changed: number };

/**
 * Reconciliation (docs/product.md §9): re-reads the contracts the platform updated since the last sweep and applies each
 * through platform sync, so a webhook that never came costs at most one sweep of staleness.
 */
export class Reconciler {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
  ) {}

  /** The installed shops (svc holds a token, not uninstalled). */
  async installedShops(): Promise<ShopRef[]> {
    return this.ctx.db.withSession((run) =>
      run<ShopRef>(
        `SELECT s.id::text AS id, s.domain FROM platform_installations i JOIN shops s ON s.id = i.shop_id
          WHERE s.uninstalled_at IS NULL AND i.access_token IS NOT NULL ORDER BY s.id`,
      ),
    );
  }

  async syncShop(shop: ShopRef, opts: { full?: boolean } = {}): Promise<SyncReport> {
    const started = this.ctx.clock.now();
    const [row] = await this.ctx.db.withSession((run) =>
      run<{ synced_until: Date | null }>(`SELECT synced_until FROM platform_installations WHERE shop_id = $1`, [shop.id]),
    );
    const since = !opts.full && row?.synced_until ? new Date(new Date(row.synced_until).getTime() - OVERLAP_MS) : null;
    const query = since ? `updated_at:>='${since.toISOString().replace(/\.\d{3}Z$/, 'Z')}'` : null;
    const report: SyncReport = { shop: shop.domain, checked: 0, created: 0, changed: 0 };
    let after: string | null = null;
    for (;;) {
      type Page = { subscriptionContracts: { nodes: PlatformContract[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
      const page: Page = await this.admin.graphql<Page>(shop, doc.CONTRACTS_PAGE, { first: doc.CONTRACTS_PER_PAGE, after, query, sortKey: doc.RECONCILE_SORT });
      const fields = page.subscriptionContracts.nodes.map(mirrorFields).filter((f): f is MirroredContract => f !== null);
      report.checked += fields.length;
      // What the mirror already holds (the contract's own actions, mostly) is not written again; the rest of the
      // page is applied together, and a contract an action holds right now once that action is done.
      const stale = await staleContracts(this.ctx, shop.id, fields);
      const outcomes = await syncContracts(this.ctx, shop.id, stale, { announce: true });
      for (const f of stale) {
        let outcome = outcomes.get(f.id)!;
        if (outcome instanceof ContractBusy) outcome = await syncUnlessBusy(this.ctx, shop.id, f);
        if (outcome instanceof Error) throw outcome;
        if (outcome === 'created') report.created++;
        if (outcome === 'changed') report.changed++;
      }
      if (!page.subscriptionContracts.pageInfo.hasNextPage) break;
      after = page.subscriptionContracts.pageInfo.endCursor;
    }
    await this.ctx.db.withSession((run) =>
      run(`UPDATE platform_installations SET synced_until = $2, last_sync_at = $2, updated_at = $2 WHERE shop_id = $1`, [shop.id, started]),
    );
    return report;
  }
}
