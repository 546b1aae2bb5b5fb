import { randomBytes } from 'node:crypto';
import { generateKey } from '../../src/services/generateKey.js';
import { setShopPlan } from '../../src/services/shops.js';
import { findShopByDomain } from '../../src/services/shops.js';
import { startTestApp, TestClock, TEST_CREDENTIALS, uniqueShop, type TestApp } from './app.js';
import type { TestDatabase } from './db.js';
import { startStandIn, type RunningStandIn } from './shopify/index.js';
import type { StandInOptions } from './shopify/options.js';

/**
 * svc in platform mode against the stand-in (docs/product.md §9): one clock for both, svc listening for real so the
 * stand-in's webhooks reach it, and helpers to install a shop and let the webhooks be processed.
 */
export type PlatformHarness = {
  t: TestApp;
  standIn: RunningStandIn;
  clock: TestClock;
  base: string;
  /** A shop on the platform with `contracts` contracts, installed in svc (import finished), on `plan`. */
  install(opts?: { contracts?: number; plan?: string; domain?: string }): Promise<InstalledShop>;
  /** Opens the admin (a session token from the platform): installs when needed, and waits for the install. */
  openAdmin(domain: string): Promise<void>;
  /** Waits for the stand-in's webhooks to arrive, then processes svc's inbox until it is empty. */
  settle(): Promise<void>;
  close(): Promise<void>;
};
export type InstalledShop = { domain: string; shopId: string; key: string; contractIds: string[] };

/**
 * The platform's clock runs (its cost buckets refill with time, as the real one's do), and tests can still jump it
 * forward (token expiry, a resume date).
 */
export class RunningClock extends TestClock {
  private offset = 0;
  override now(): Date {
    return new Date(Date.now() + this.offset);
  }
  override advance(ms: number): void {
    this.offset += ms;
  }
  override set(d: Date | string): void {
    this.offset = new Date(d).getTime() - Date.now();
  }
}

export async function startPlatform(
  opts: { standIn?: Partial<StandInOptions>; database?: TestDatabase; timeoutMs?: number; throttleBudgetMs?: number; clock?: TestClock } = {},
): Promise<PlatformHarness> {
  const clock = opts.clock ?? new RunningClock();
  const standIn = await startStandIn({ appKey: TEST_CREDENTIALS.apiKey, appSecret: TEST_CREDENTIALS.secret, clock, ...opts.standIn });
  let base = '';
  const t = await startTestApp({
    clock,
    database: opts.database,
    shopify: {
      kind: 'shopify',
      apiKey: TEST_CREDENTIALS.apiKey,
      apiSecret: TEST_CREDENTIALS.secret,
      apiVersion: '2026-10',
      shopUrlTemplate: standIn.shopUrlTemplate,
      tokenKey: randomBytes(32),
      enterprisePrice: { amount: '299.00', currencyCode: 'USD' },
      billingTest: true,
      syncIntervalMs: 900_000,
      timeoutMs: opts.timeoutMs ?? 2000,
      throttleBudgetMs: opts.throttleBudgetMs,
      publicUrl: () => base,
    },
  });
  base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('[::1]', '127.0.0.1');
  standIn.appWebhooks = { uri: `${base}/webhooks/shopify` };
  const shopify = t.shopify!;

  const settle = async () => {
    for (let round = 0; round < 20; round++) {
      await standIn.webhooks.flush();
      if ((await shopify.inbox.processDue()) === 0) return;
    }
  };
  const openAdmin = async (domain: string) => {
    const res = await t.inject({ method: 'GET', url: '/admin/api/shop', headers: { authorization: `Bearer ${standIn.sessionToken(domain)}` } });
    if (res.statusCode !== 200) throw new Error(`admin /shop answered ${res.statusCode}: ${res.body}`);
    const shop = (await findShopByDomain({ ctx: t.ctx, input: { domain } }))!;
    await shopify.installer.continueInBackground(shop);
    // A failed install step is only logged by the service (reconciliation retries it): a test must not go on with a
    // half-installed shop.
    const row = await shopify.installer.installation(shop.id);
    if (row?.importStatus !== 'completed' || !row.webhooksRegisteredAt) {
      throw new Error(`install of ${domain} did not finish: import ${row?.importStatus} (${row?.importError ?? 'no error'}), webhooks ${row?.webhooksRegisteredAt ? 'registered' : 'not registered'}`);
    }
  };

  return {
    t,
    standIn,
    clock,
    get base() {
      return base;
    },
    openAdmin,
    settle,
    async install(o = {}) {
      const domain = o.domain ?? uniqueShop('platform');
      standIn.createShop(domain);
      const contractIds: string[] = [];
      for (let i = 0; i < (o.contracts ?? 3); i++) contractIds.push(String(standIn.createContract(domain, {}, { silent: true }).id));
      await openAdmin(domain);
      // A key is generated on Enterprise (the admin refuses one without API access); then the plan asked for.
      const shop = await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'enterprise' } });
      const { secret } = await generateKey({ ctx: t.ctx, input: { shopId: shop.id, name: 'platform test' } });
      if (o.plan && o.plan !== 'enterprise') await setShopPlan({ ctx: t.ctx, input: { domain, plan: o.plan } });
      // The install's own webhook traffic (none expected) is out of the way before the test starts.
      await settle();
      return { domain, shopId: shop.id, key: secret, contractIds };
    },
    async close() {
      await t.close();
      await standIn.close();
    },
  };
}
