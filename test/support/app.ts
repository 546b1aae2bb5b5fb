import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps } from '../../src/app.js';
import { createLogger } from '../../src/http/logging.js';
import type { Permissions } from '../../src/domain/permissions.js';
import type { KeyAccess } from '../../src/domain/resources.js';
import { systemResolve, type AddressPolicy } from '../../src/webhooks/addressGuard.js';
import { createServiceContext, type Clock, type ServiceContext } from '../../src/services/context.js';
import { generateKey } from '../../src/services/generateKey.js';
import { seedContracts } from '../../src/services/seedContracts.js';
import { signSessionToken, type AppCredentials } from '../../src/services/sessionTokens.js';
import { setShopPlan } from '../../src/services/shops.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { shopifyPlatform, type Shopify } from '../../src/platform/shopify/index.js';
import { ManualScheduler, TestGateway } from '../../src/services/testGateway.js';
import { recordBillingOutcome } from '../../src/services/recordBillingOutcome.js';

/** A clock tests move by hand: no sleeps, no flakiness. */
export class TestClock implements Clock {
  private t: number;
  constructor(start = new Date('2026-11-22T10:00:00.000Z')) {
    this.t = start.getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(d: Date | string): void {
    this.t = new Date(d).getTime();
  }
}

export const TEST_CREDENTIALS: AppCredentials = { apiKey: 'test-app-key', secret: 'test-app-secret-0123456789abcdef' };

let shopCounter = 0;
/** A shop domain no other test uses. */
export const uniqueShop = (label = 'shop') =>
  `${label}-${process.pid}-${Date.now().toString(36)}-${++shopCounter}.myshopify.com`;

export type TestApp = {
  app: FastifyInstance;
  ctx: ServiceContext;
  /** Platform mode's services (with `shopify`). */
  shopify?: Shopify;
  /** Renewals: the test gateway, whose outcomes wait in `scheduler` until a test runs them (scheduler.runAll()). */
  billing: { gateway: TestGateway; scheduler: ManualScheduler };
  clock: TestClock;
  database: TestDatabase;
  /** Every log line the app wrote. */
  logs: string[];
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
  sessionToken(shop: string, opts?: { ttlSeconds?: number }): Promise<string>;
  /**
   * A shop on `plan` with a fresh key (read-write unless `access` or `permissions` says otherwise):
   * { shopId, domain, key, keyId, fingerprint }.
   */
  shopWithKey(
    plan?: string,
    opts?: { access?: KeyAccess; permissions?: Permissions },
  ): Promise<{ shopId: string; domain: string; key: string; keyId: string; fingerprint: string }>;
  seed(shopId: string, count: number): Promise<{ id: string }[]>;
  close(): Promise<void>;
};

export async function startTestApp(
  opts: {
    freeUntil?: Date | null;
    clock?: TestClock;
    database?: TestDatabase;
    extraRoutes?: (app: FastifyInstance) => void;
    /** Where webhooks may go: tests send them to local receivers, so private addresses are allowed unless said. */
    webhookAddresses?: AddressPolicy;
    /** Optional parts of the app a test turns on: rate limits, metrics collectors, trusted proxies, client limits. */
    appDeps?: Pick<AppDeps, 'rateLimit' | 'metrics' | 'trustProxy' | 'clientLimits' | 'secretScanningKeys' | 'requestLog'>;
    /** Platform mode against a stand-in (test/support/platform.ts): the port, webhooks in, install. */
    shopify?: Parameters<typeof shopifyPlatform>[1] & { publicUrl: () => string };
  } = {},
): Promise<TestApp> {
  const database = opts.database ?? (await createTestDatabase());
  const clock = opts.clock ?? new TestClock();
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', sink: { write: (line) => logs.push(line) } });
  const platform = opts.shopify ? shopifyPlatform({ db: database.db, clock }, opts.shopify) : null;
  const ctx: ServiceContext = createServiceContext({
    db: database.db,
    clock,
    freeUntil: opts.freeUntil ?? null,
    warn: (o, m) => logger.warn(o, m),
    webhookAddresses: opts.webhookAddresses ?? { allowPrivate: true, resolve: systemResolve },
    platform: platform?.port,
  });
  const scheduler = new ManualScheduler();
  const gateway = new TestGateway({ db: database.db, record: (report) => recordBillingOutcome(ctx, report) }, { scheduler });
  if (!opts.shopify) ctx.billing = { gateway, maxLateMs: 3 * 86_400_000 };
  const publicUrl = opts.shopify?.publicUrl;
  const shopify = platform?.attach(ctx, {
    publicUrl: () => publicUrl!(),
    log: { info: (o, m) => logger.info(o, m), warn: (o, m) => logger.warn(o, m) },
  });
  const app = await buildApp({
    ctx,
    credentials: TEST_CREDENTIALS,
    logger,
    extraRoutes: opts.extraRoutes,
    ...opts.appDeps,
    shopify: shopify ? { services: shopify } : undefined,
  });
  return {
    app,
    ctx,
    shopify,
    billing: { gateway, scheduler },
    clock,
    database,
    logs,
    inject: (o) => app.inject(o),
    sessionToken: (shop, o) => signSessionToken(TEST_CREDENTIALS, shop, { now: clock.now(), ttlSeconds: o?.ttlSeconds }),
    async shopWithKey(plan = 'enterprise', o = {}) {
      const domain = uniqueShop();
      const shop = await setShopPlan({ ctx, input: { domain, plan: 'enterprise' } });
      const { key, secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'test', access: o.access, permissions: o.permissions } });
      if (plan !== 'enterprise') await setShopPlan({ ctx, input: { domain, plan } });
      return { shopId: shop.id, domain, key: secret, keyId: key.id, fingerprint: key.fingerprint };
    },
    seed: (shopId, count) => seedContracts({ ctx, input: { shopId, count } }),
    async close() {
      await app.close();
      if (!opts.database) await database.drop();
    },
  };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
