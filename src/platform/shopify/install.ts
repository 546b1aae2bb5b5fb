import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { eq } from 'drizzle-orm';
import { platformInstallations, shops, type PlatformInstallationRow } from '../../db/schema.js';
import { API_PLAN } from '../../domain/access.js';
import { ServiceError } from '../../domain/errors.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { mirrorFields, type PlatformContract, type PlatformDiscount, type PlatformLine } from './contracts.js';
import type { PlatformContract as MirroredContract } from '../../db/mirror.js';
import * as doc from './documents.js';
import { insertContracts } from '../../services/platformSync.js';
import { WEBHOOK_TOPICS } from './topics.js';

/** Every topic svc subscribes to at install (topics.ts; the compliance topics are declared in the app's configuration). */
export { WEBHOOK_TOPICS };

/** The app subscription that gives API access (PRODUCT §9). */
export const ENTERPRISE_SUBSCRIPTION = 'Enterprise';
/** Up to this many contracts the import pages through the API; a larger shop is read with a bulk operation. */
export const PAGED_IMPORT_LIMIT = 250;
const INSERT_BATCH = 1000;
/** A running import whose row has not moved for this long was left by a stopped process: another may take it. */
const STALE_IMPORT_MS = 2 * 60_000;
const FAILED_RETRY_MS = 60_000;
const TOKEN_RENEW_MS = 5 * 60_000;

export type ImportProgress = {
  status: PlatformInstallationRow['importStatus'];
  mode: PlatformInstallationRow['importMode'];
  imported: number;
  total: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
};

export type InstallLog = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };

/**
 * Install and what follows it (PRODUCT §9): token exchange from the first session token, webhook registration
 * (idempotent), the plan from the app subscription, and the import of every contract (paged for a small shop, a
 * bulk operation for a large one), with progress kept on the installation row. Every step can run again: a stopped
 * process's import is taken over by the next reconciliation round.
 */
/** AppSubscriptionStatus of the Admin API (2026-10). */
export const APP_SUBSCRIPTION_STATUSES = ['PENDING', 'ACCEPTED', 'ACTIVE', 'DECLINED', 'EXPIRED', 'FROZEN', 'CANCELLED'] as const;
export type AppSubscriptionStatus = (typeof APP_SUBSCRIPTION_STATUSES)[number];

export class ShopifyInstaller {
  private readonly running = new Map<string, Promise<void>>();
  private readonly installing = new Map<string, Promise<void>>();
  private readonly bulkWaiters = new Map<string, () => void>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly opts: { publicUrl: string | (() => string); enterprisePrice: { amount: string; currencyCode: string }; billingTest: boolean; log?: InstallLog },
  ) {}

  private publicUrl(): string {
    return typeof this.opts.publicUrl === 'function' ? this.opts.publicUrl() : this.opts.publicUrl;
  }

  async installation(shopId: string): Promise<PlatformInstallationRow | null> {
    const [row] = await this.ctx.db.orm.select().from(platformInstallations).where(eq(platformInstallations.shopId, shopId));
    return row ?? null;
  }

  /**
   * Called with every valid session token the admin screen sends: installs the shop when svc holds no token for it
   * (first install, reinstall), then makes sure the rest of the install runs. Cheap when all is done.
   */
  async ensureInstalled(shop: ShopRef, sessionToken: string): Promise<void> {
    // The admin screen's first load sends several requests at once: one install for them all.
    const inFlight = this.installing.get(shop.id);
    if (inFlight) return inFlight;
    const p = this.install(shop, sessionToken).finally(() => this.installing.delete(shop.id));
    this.installing.set(shop.id, p);
    return p;
  }

  private async install(shop: ShopRef, sessionToken: string): Promise<void> {
    const [state] = await this.ctx.db.withSession((run) =>
      run<{ uninstalled: boolean }>(`SELECT uninstalled_at IS NOT NULL AS uninstalled FROM shops WHERE id = $1`, [shop.id]),
    );
    const row = await this.installation(shop.id);
    // An access token about to expire may come with a refresh token the platform has already spent (a refresh
    // whose answer was lost): the merchant's visit brings a session token, so exchange it rather than find out later.
    const expiring = !!row?.accessTokenExpiresAt && row.accessTokenExpiresAt.getTime() - TOKEN_RENEW_MS <= this.ctx.clock.now().getTime();
    if (!row?.accessToken || state?.uninstalled || expiring) {
      await this.admin.exchangeSessionToken(shop, sessionToken);
      // Back after an uninstall: the platform deleted the app's webhook subscriptions with it, so subscribe again,
      // and read the plan again, in the steps that follow. (Forgetting the tokens at the uninstall forgets that the
      // webhooks were registered too; this also covers a shop uninstalled before it did.)
      if (row && state?.uninstalled) {
        await this.ctx.db.orm.update(platformInstallations).set({ webhooksRegisteredAt: null }).where(eq(platformInstallations.shopId, shop.id));
      }
      this.opts.log?.info({ shop: shop.domain }, 'platform: shop installed (token exchanged)');
      void this.continueInBackground(shop);
      return;
    }
    // A failed step is tried again a minute later at the soonest (reconciliation also retries it).
    const failedRecently = row.importStatus === 'failed' && this.ctx.clock.now().getTime() - row.updatedAt.getTime() < FAILED_RETRY_MS;
    if ((row.importStatus !== 'completed' || !row.webhooksRegisteredAt) && !failedRecently) void this.continueInBackground(shop);
  }

  /** Runs the rest of the install once per shop per process at a time; failures are logged and retried later. */
  continueInBackground(shop: ShopRef): Promise<void> {
    let p = this.running.get(shop.id);
    if (!p) {
      p = this.continueInstall(shop)
        .catch((err) => this.opts.log?.warn({ shop: shop.domain, err: { message: (err as Error).message } }, 'platform: install step failed; retried by reconciliation'))
        .finally(() => this.running.delete(shop.id));
      this.running.set(shop.id, p);
    }
    return p;
  }

  /** Webhooks, plan, import: each done only if not done yet. */
  async continueInstall(shop: ShopRef): Promise<void> {
    const row = await this.installation(shop.id);
    if (!row?.accessToken) return;
    if (!row.webhooksRegisteredAt) await this.registerWebhooks(shop);
    if (!row.webhooksRegisteredAt) await this.refreshPlan(shop);
    if (row.importStatus !== 'completed') await this.runImport(shop);
  }

  /** Subscribes to every topic that has no subscription to svc's address yet. */
  async registerWebhooks(shop: ShopRef): Promise<number> {
    const uri = `${this.publicUrl()}/webhooks/shopify`;
    const have = new Set<string>();
    let after: string | null = null;
    for (;;) {
      type Page = { webhookSubscriptions: { nodes: { topic: string; uri: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
      const page: Page = await this.admin.graphql<Page>(shop, doc.WEBHOOK_SUBSCRIPTIONS, { after });
      for (const s of page.webhookSubscriptions.nodes) if (s.uri === uri) have.add(s.topic);
      if (!page.webhookSubscriptions.pageInfo.hasNextPage) break;
      after = page.webhookSubscriptions.pageInfo.endCursor;
    }
    let created = 0;
    for (const topic of WEBHOOK_TOPICS) {
      if (have.has(topic)) continue;
      type Created = { webhookSubscriptionCreate: { userErrors: { message: string }[] } };
      const r = await this.admin.graphql<Created>(shop, doc.SUBSCRIBE, { topic, uri });
      const e = r.webhookSubscriptionCreate.userErrors[0];
      // "already taken": another instance registered it a moment ago; anything else is worth a line, not a stop.
      if (e && !/taken|exists/i.test(e.message)) this.opts.log?.warn({ shop: shop.domain, topic, message: e.message }, 'platform: webhook registration refused');
      else created++;
    }
    const now = this.ctx.clock.now();
    await this.ctx.db.orm.update(platformInstallations).set({ webhooksRegisteredAt: now, updatedAt: now }).where(eq(platformInstallations.shopId, shop.id));
    return created;
  }

  /** The plan from the shop's app subscriptions: `enterprise` while an ACTIVE one is named Enterprise. */
  async refreshPlan(shop: ShopRef): Promise<string> {
    type Subs = { currentAppInstallation: { activeSubscriptions: { name: string; status: string }[] } };
    const r = await this.admin.graphql<Subs>(shop, doc.APP_SUBSCRIPTIONS);
    const enterprise = r.currentAppInstallation.activeSubscriptions.some((s) => s.name === ENTERPRISE_SUBSCRIPTION && s.status === 'ACTIVE');
    const plan = enterprise ? API_PLAN : 'basic';
    await this.ctx.db.orm.update(shops).set({ plan, updatedAt: this.ctx.clock.now() }).where(eq(shops.id, shop.id));
    return plan;
  }

  /**
   * "Upgrade to Enterprise": creates the app subscription and answers the platform's confirmation page, where the
   * merchant approves it; app_subscriptions/update then turns API access on.
   */
  async startUpgrade(shop: ShopRef): Promise<{ confirmationUrl: string }> {
    // The merchant comes back to Settings → API once the platform's confirmation page is done.
    const returnUrl = `${this.publicUrl()}/admin/settings/api?shop=${encodeURIComponent(shop.domain)}`;
    type Created = { appSubscriptionCreate: { confirmationUrl: string | null; userErrors: { message: string }[] } };
    const price = this.opts.enterprisePrice;
    const r = await this.admin.graphql<Created>(shop, doc.CREATE_APP_SUBSCRIPTION, {
      name: ENTERPRISE_SUBSCRIPTION,
      returnUrl,
      test: this.opts.billingTest,
      items: [{ plan: { appRecurringPricingDetails: { price: { amount: price.amount, currencyCode: price.currencyCode }, interval: 'EVERY_30_DAYS' } } }],
    });
    const a = r.appSubscriptionCreate;
    if (a.userErrors.length || !a.confirmationUrl) {
      throw new ServiceError('platform_rejected', `The platform refused the subscription: ${(a.userErrors[0]?.message ?? 'no confirmation page').slice(0, 300)}`);
    }
    return { confirmationUrl: a.confirmationUrl };
  }

  /**
   * What became of the subscription the merchant comes back from (`charge_id` on the return URL): approved, the plan
   * is read at once (the platform's webhook saying so comes a moment later); declined or expired, the page says so
   * instead of waiting. Null when the shop has no Enterprise subscription of that id.
   */
  async upgradeOutcome(shop: ShopRef, chargeId: string): Promise<{ status: AppSubscriptionStatus; plan: string } | null> {
    type Sub = { node: { name?: string; status?: AppSubscriptionStatus } | null };
    const r = await this.admin.graphql<Sub>(shop, doc.APP_SUBSCRIPTION, { id: `gid://shopify/AppSubscription/${chargeId}` });
    if (!r.node?.status || r.node.name !== ENTERPRISE_SUBSCRIPTION) return null;
    const plan = r.node.status === 'ACTIVE' ? await this.refreshPlan(shop) : (await this.ctx.db.orm.select({ plan: shops.plan }).from(shops).where(eq(shops.id, shop.id)))[0].plan;
    return { status: r.node.status, plan };
  }

  // ---- import ----

  /**
   * Takes the import if no one else runs it (pending, failed, or running but stale), then pages through the
   * contracts; past PAGED_IMPORT_LIMIT it reads the rest with a bulk operation. Contracts already in the mirror are
   * left alone (syncContract keeps them current).
   */
  async runImport(shop: ShopRef): Promise<boolean> {
    const now = this.ctx.clock.now();
    const claimed = await this.ctx.db.withSession((run) =>
      run<{ import_cursor: string | null; import_done: number; import_bulk_operation_id: string | null }>(
        `UPDATE platform_installations
            SET import_status = 'running', import_error = NULL, updated_at = $2,
                import_started_at = COALESCE(import_started_at, $2), synced_until = COALESCE(synced_until, $2)
          WHERE shop_id = $1 AND (import_status IN ('pending', 'failed') OR (import_status = 'running' AND updated_at < $3))
          RETURNING import_cursor, import_done, import_bulk_operation_id`,
        [shop.id, now, new Date(now.getTime() - STALE_IMPORT_MS)],
      ),
    );
    if (!claimed.length) return false;
    const state = claimed[0];
    try {
      let imported = state.import_done;
      if (!state.import_bulk_operation_id) {
        let after = state.import_cursor;
        await this.progress(shop.id, { import_mode: 'paged' });
        for (;;) {
          type Page = { subscriptionContracts: { nodes: PlatformContract[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
          const page: Page = await this.admin.graphql<Page>(shop, doc.CONTRACTS_PAGE, { first: doc.CONTRACTS_PER_PAGE, after, query: null, sortKey: doc.IMPORT_SORT });
          await insertContracts(this.ctx, shop.id, usable(page.subscriptionContracts.nodes));
          imported += page.subscriptionContracts.nodes.length;
          after = page.subscriptionContracts.pageInfo.endCursor;
          await this.progress(shop.id, { import_done: imported, import_cursor: after });
          if (!page.subscriptionContracts.pageInfo.hasNextPage) return this.finishImport(shop.id, imported);
          if (imported >= PAGED_IMPORT_LIMIT) break;
        }
      }
      return await this.bulkImport(shop, state.import_bulk_operation_id);
    } catch (err) {
      const message = err instanceof ServiceError ? err.message : 'unexpected error';
      await this.progress(shop.id, { import_status: 'failed', import_error: message.slice(0, 500) });
      throw err;
    }
  }

  private async bulkImport(shop: ShopRef, existing: string | null): Promise<boolean> {
    let id = existing;
    if (!id) {
      type Run = { bulkOperationRunQuery: { bulkOperation: { id: string } | null; userErrors: { message: string }[] } };
      const r = await this.admin.graphql<Run>(shop, doc.RUN_BULK_QUERY, { query: doc.BULK_CONTRACTS_QUERY });
      const op = r.bulkOperationRunQuery.bulkOperation;
      if (!op) throw new ServiceError('platform_rejected', `The platform refused the bulk import: ${r.bulkOperationRunQuery.userErrors[0]?.message ?? 'no operation'}`);
      id = op.id;
      await this.progress(shop.id, { import_mode: 'bulk', import_bulk_operation_id: id, import_done: 0 });
    }
    type Op = { bulkOperation: { status: string; errorCode: string | null; url: string | null; rootObjectCount: string } | null };
    for (;;) {
      const r = await this.admin.graphql<Op>(shop, doc.BULK_OPERATION, { id });
      const op = r.bulkOperation;
      if (!op || ['FAILED', 'CANCELED', 'CANCELING', 'EXPIRED'].includes(op.status)) {
        // Start again with a new operation next time.
        await this.progress(shop.id, { import_bulk_operation_id: null });
        throw new ServiceError('platform_unavailable', `The bulk import ended ${op?.status ?? 'unknown'}${op?.errorCode ? ` (${op.errorCode})` : ''}.`);
      }
      if (op.status === 'COMPLETED') {
        await this.progress(shop.id, { import_total: Number(op.rootObjectCount) });
        const n = op.url ? await this.readBulkResult(shop.id, op.url) : 0;
        return this.finishImport(shop.id, n);
      }
      await this.progress(shop.id, {});
      // bulk_operations/finish wakes this at once; polling covers a webhook that is late or never comes.
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.bulkWaiters.set(shop.id, () => {
          clearTimeout(t);
          resolve();
        });
      });
      this.bulkWaiters.delete(shop.id);
    }
  }

  /** bulk_operations/finish arrived for the shop. */
  bulkFinished(shopId: string): void {
    this.bulkWaiters.get(shopId)?.();
  }

  /**
   * Streams the JSONL result: a contract's line, then its lines (`__parentId`) right after it, as the platform
   * writes them; contracts are inserted a thousand at a time, so memory stays flat however large the shop.
   */
  private async readBulkResult(shopId: string, url: string): Promise<number> {
    const res = await fetch(url, { signal: AbortSignal.timeout(10 * 60_000) }).catch(() => null);
    if (!res?.ok || !res.body) throw new ServiceError('platform_unavailable', 'The bulk import result could not be downloaded.');
    const lines = createInterface({ input: Readable.fromWeb(res.body as never), crlfDelay: Infinity });
    let batch: PlatformContract[] = [];
    let current: (PlatformContract & { lines: PlatformLine[]; discounts: PlatformDiscount[] }) | null = null;
    let done = 0;
    const flush = async () => {
      await insertContracts(this.ctx, shopId, usable(batch));
      done += batch.length;
      batch = [];
      await this.progress(shopId, { import_done: done });
    };
    for await (const line of lines) {
      if (!line.trim()) continue;
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o.__parentId) {
        // A contract's lines and discounts follow it, each with the contract's id; a line is the one with a quantity.
        if (current && o.__parentId === current.id) ('quantity' in o ? current.lines : current.discounts).push(o as never);
        continue;
      }
      current = { ...(o as unknown as PlatformContract), lines: [], discounts: [] };
      batch.push(current);
      if (batch.length > INSERT_BATCH) {
        // Keep the contract being read (its lines may follow); insert the ones before it.
        const last = batch.pop()!;
        await flush();
        batch.push(last);
      }
    }
    await flush();
    return done;
  }

  private async finishImport(shopId: string, imported: number): Promise<boolean> {
    await this.progress(shopId, { import_status: 'completed', import_done: imported, import_total: imported, import_finished_at: this.ctx.clock.now(), import_cursor: null, import_bulk_operation_id: null });
    return true;
  }

  private async progress(shopId: string, set: Record<string, unknown>): Promise<void> {
    const cols = Object.keys(set);
    const assignments = [...cols.map((c, i) => `${c} = $${i + 2}`), `updated_at = $${cols.length + 2}`];
    await this.ctx.db.withSession((run) =>
      run(`UPDATE platform_installations SET ${assignments.join(', ')} WHERE shop_id = $1`, [shopId, ...Object.values(set), this.ctx.clock.now()]),
    );
  }

  async importProgress(shopId: string): Promise<ImportProgress | null> {
    const row = await this.installation(shopId);
    if (!row) return null;
    return {
      status: row.importStatus,
      mode: row.importMode,
      imported: row.importDone,
      total: row.importTotal,
      startedAt: row.importStartedAt?.toISOString() ?? null,
      finishedAt: row.importFinishedAt?.toISOString() ?? null,
      error: row.importError,
    };
  }
}

function usable(nodes: PlatformContract[]): MirroredContract[] {
  const out: MirroredContract[] = [];
  for (const n of nodes) {
    const f = mirrorFields(n);
    if (f) out.push(f);
  }
  return out;
}
