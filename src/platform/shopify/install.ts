import { eq } from 'drizzle-orm';
import { platformInstallations, type PlatformInstallationRow } from '../../db/schema.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { ShopPlans, type AppSubscriptionStatus, type PlanOptions } from './appPlan.js';
import { ContractImport, type ImportProgress } from './contractImport.js';
import * as doc from './documents.js';
import { WEBHOOK_TOPICS } from './topics.js';

export { APP_SUBSCRIPTION_STATUSES, ENTERPRISE_SUBSCRIPTION, type AppSubscriptionStatus } from './appPlan.js';
export { PAGED_IMPORT_LIMIT, type ImportProgress } from './contractImport.js';
/** Every topic svc subscribes to at install (topics.ts; the compliance topics are declared in the app's configuration). */
export { WEBHOOK_TOPICS };

const FAILED_RETRY_MS = 60_000;
const TOKEN_RENEW_MS = 5 * 60_000;

export type InstallLog = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };

/**
 * Install and what follows it (docs/product.md, "Platform mode"): token exchange from the first session token, webhook
 * registration (idempotent), the plan from the app subscription (appPlan.ts), and the import of every contract
 * (contractImport.ts). Every step can run again: a stopped process's import is taken over by the next reconciliation
 * round.
 */
export class ShopifyInstaller {
  private readonly running = new Map<string, Promise<void>>();
  private readonly installing = new Map<string, Promise<void>>();
  private readonly plans: ShopPlans;
  private readonly contracts: ContractImport;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly opts: PlanOptions & { log?: InstallLog },
  ) {
    this.plans = new ShopPlans(ctx, admin, opts);
    this.contracts = new ContractImport(ctx, admin);
  }

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

  /** The plan from the shop's app subscriptions (appPlan.ts). */
  refreshPlan(shop: ShopRef): Promise<string> {
    return this.plans.refreshPlan(shop);
  }

  /** "Upgrade to Enterprise": the subscription created, and the platform's page where the merchant approves it. */
  startUpgrade(shop: ShopRef): Promise<{ confirmationUrl: string }> {
    return this.plans.startUpgrade(shop);
  }

  /** What became of the subscription the merchant comes back from (appPlan.ts). */
  upgradeOutcome(shop: ShopRef, chargeId: string): Promise<{ status: AppSubscriptionStatus; plan: string } | null> {
    return this.plans.upgradeOutcome(shop, chargeId);
  }

  /** Takes the shop's import if no one else runs it, and runs it (contractImport.ts). */
  runImport(shop: ShopRef): Promise<boolean> {
    return this.contracts.runImport(shop);
  }

  /** bulk_operations/finish arrived for the shop. */
  bulkFinished(shopId: string): void {
    this.contracts.bulkFinished(shopId);
  }

  importProgress(shopId: string): Promise<ImportProgress | null> {
    return this.contracts.importProgress(shopId);
  }
}
