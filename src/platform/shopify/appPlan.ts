import { eq } from 'drizzle-orm';
import { shops } from '../../db/schema.js';
import { API_PLAN } from '../../domain/access.js';
import { ServiceError } from '../../domain/errors.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import * as doc from './documents.js';

/** The app subscription that gives API access (docs/product.md, "Platform mode"). */
export const ENTERPRISE_SUBSCRIPTION = 'Enterprise';

/** AppSubscriptionStatus of the Admin API (2026-10). */
export const APP_SUBSCRIPTION_STATUSES = ['PENDING', 'ACCEPTED', 'ACTIVE', 'DECLINED', 'EXPIRED', 'FROZEN', 'CANCELLED'] as const;
export type AppSubscriptionStatus = (typeof APP_SUBSCRIPTION_STATUSES)[number];

export type PlanOptions = { publicUrl: string | (() => string); enterprisePrice: { amount: string; currencyCode: string }; billingTest: boolean };

/** A shop's plan in platform mode: read from its app subscriptions, and the upgrade the merchant approves there. */
export class ShopPlans {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly opts: PlanOptions,
  ) {}

  private publicUrl(): string {
    return typeof this.opts.publicUrl === 'function' ? this.opts.publicUrl() : this.opts.publicUrl;
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
}
