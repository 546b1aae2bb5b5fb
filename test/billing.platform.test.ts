import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptState } from '../src/domain/billing.js';
import { generateKey } from '../src/services/generateKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { BillingWorker } from '../src/workers/billing.js';
import type { BillingGateway } from '../src/services/billingGateway.js';
import { PendingAttemptsWorker } from '../src/workers/platform.js';
import { bearer, uniqueShop } from './support/app.js';
import { startPlatform, type PlatformHarness } from './support/platform.js';

/**
 * Renewals in platform mode, against the stand-in: svc creates the platform's billing attempts, learns their outcome
 * from the webhooks or by reading attempts still pending, sets the next billing date there, carries out dunning's
 * final action there, spreads a storm over the cost bucket, and bills nothing it must not.
 */

let p: PlatformHarness;
let poller: PendingAttemptsWorker;
const CYCLE = '2026-11-01T09:00:00.000Z';
const DAY = 86_400_000;

beforeAll(async () => {
  p = await startPlatform({ timeoutMs: 3000 });
  p.clock.set('2026-11-01T09:00:30.000Z');
  p.t.ctx.billing = { gateway: p.t.shopify!.billing, maxLateMs: 3 * DAY };
  poller = new PendingAttemptsWorker(p.t.ctx, p.t.shopify!);
});
afterAll(async () => {
  await p?.close();
});
beforeEach(() => {
  p.standIn.faults.clear();
  p.standIn.webhooks.clearFaults();
});

type Shop = { domain: string; shopId: string; key: string; ids: string[] };

/** A shop with `n` contracts due at CYCLE (monthly, two lines of 12.50 EUR), installed in svc, on Enterprise. */
async function shopWithDueContracts(n: number, policy?: object): Promise<Shop> {
  const domain = uniqueShop('billing');
  p.standIn.createShop(domain);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const c = p.standIn.createContract(
      domain,
      { nextBillingDate: CYCLE, currencyCode: 'EUR', lines: [{ quantity: 2, currentPrice: { amount: '12.5', currencyCode: 'EUR' } }] },
      { silent: true },
    );
    ids.push(String(c.id));
  }
  await p.openAdmin(domain);
  const shop = await setShopPlan({ ctx: p.t.ctx, input: { domain, plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx: p.t.ctx, input: { shopId: shop.id, name: 'billing' } });
  if (policy) {
    await p.t.ctx.db.withSession((run) => run(`INSERT INTO billing_policies (shop_id, policy, updated_at) VALUES ($1, $2::jsonb, now())`, [shop.id, JSON.stringify(policy)]));
  }
  await p.settle();
  return { domain, shopId: shop.id, key: secret, ids };
}

/** Bills what is due (this shop's only), lets the stand-in settle and its webhooks be processed. */
async function billAndSettle(shop: Shop): Promise<void> {
  await new BillingWorker(p.t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 8, shopId: shop.shopId }).tick();
  await p.standIn.billing.flush();
  await p.settle();
}

async function attempts(shop: Shop, contractId: string) {
  return p.t.ctx.db.withSession((run) =>
    run<{ status: string; error_code: string | null; platform_error_code: string | null; next_action_url: string | null; order: { name: string; amount: string } | null; platform_reference: string | null }>(
      `SELECT status, error_code, platform_error_code, next_action_url, "order", platform_reference FROM billing_attempts WHERE shop_id = $1 AND contract_id = $2 ORDER BY created_at`,
      [shop.shopId, contractId],
    ),
  );
}
const contract = async (shop: Shop, id: string) =>
  (await p.t.inject({ method: 'GET', url: `/api/v1/subscription-contracts/${id}`, headers: bearer(shop.key) })).json().contract as {
    status: string;
    nextBillingDate: string;
    billing: { status: string; lastAttempt: AttemptState | null };
  };
const events = async (shop: Shop, id: string) =>
  ((await p.t.inject({ method: 'GET', url: `/api/v1/subscription-contracts/${id}/events`, headers: bearer(shop.key) })).json().events as { type: string }[]).map((e) => e.type);
const platformDate = (shop: Shop, id: string) => p.standIn.contract(shop.domain, id).nextBillingDate?.toISOString();

describe('a due contract is billed on the platform', () => {
  it('one attempt with svc’s idempotency key, the cycle by its date and originTime; success records the order and sets the next date on the platform', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    await billAndSettle(shop);
    const [call] = p.standIn.calls('subscriptionBillingAttemptCreate', shop.domain);
    const input = call.args.subscriptionBillingAttemptInput as { idempotencyKey: string; originTime: string; billingCycleSelector: { date: string } };
    expect(input.idempotencyKey).toMatch(new RegExp(`^svc-${id}-`));
    expect(new Date(input.originTime).toISOString()).toBe(CYCLE);
    expect(new Date(input.billingCycleSelector.date).toISOString()).toBe(CYCLE);
    const [a] = await attempts(shop, id);
    expect(a).toMatchObject({ status: 'succeeded', order: { name: '#1001', amount: '25.00' } });
    expect(a.platform_reference).toMatch(/^gid:\/\/shopify\/SubscriptionBillingAttempt\/\d+$/);
    expect(platformDate(shop, id)).toBe('2026-12-01T09:00:00.000Z');
    const c = await contract(shop, id);
    expect(c.nextBillingDate).toBe('2026-12-01T09:00:00.000Z');
    expect(c.billing.status).toBe('ok');
    expect(await events(shop, id)).toContain('billing.succeeded');
  });

  it('each failure code: svc’s code with the platform’s beside it, and no date moved on the platform', async () => {
    const cases: [string, string][] = [
      ['INSUFFICIENT_FUNDS', 'insufficient_funds'],
      ['DO_NOT_HONOR', 'card_declined'],
      ['AUTHENTICATION_FAILED', 'authentication_failed'],
      ['PAYMENT_PROVIDER_ERROR', 'processing_error'],
      ['EXPIRED_CARD', 'expired_card'],
      ['PAYMENT_METHOD_NOT_FOUND', 'payment_method_revoked'],
      ['FRAUD_SUSPECTED', 'fraud'],
      ['INSUFFICIENT_INVENTORY', 'out_of_stock'],
      ['UNEXPECTED_ERROR', 'processing_error'],
    ];
    const shop = await shopWithDueContracts(cases.length);
    cases.forEach(([code], i) => p.standIn.billing.willAnswer(shop.domain, shop.ids[i], { kind: 'failure', code }, { count: 1 }));
    await billAndSettle(shop);
    for (const [i, [platformCode, code]] of cases.entries()) {
      const [a] = await attempts(shop, shop.ids[i]);
      expect(a, platformCode).toMatchObject({ status: 'failed', error_code: code, platform_error_code: platformCode });
      expect(platformDate(shop, shop.ids[i])).toBe(CYCLE);
      expect((await contract(shop, shop.ids[i])).billing.status).toBe('retrying');
    }
    expect(p.standIn.calls('subscriptionContractSetNextBillingDate', shop.domain)).toHaveLength(0);
  });

  it('a challenge: no webhook until the buyer is back, so the poller finds it action required after 10 minutes', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.billing.willAnswer(shop.domain, id, { kind: 'challenge' }, { count: 1 });
    await billAndSettle(shop);
    expect((await attempts(shop, id))[0].status).toBe('pending');
    expect(await poller.tick()).toBe(0); // not 10 minutes yet
    p.clock.advance(11 * 60_000);
    await poller.tick();
    const [a] = await attempts(shop, id);
    expect(a.status).toBe('action_required');
    expect(a.next_action_url).toMatch(/\/authenticate\//);
    expect((await contract(shop, id)).billing.status).toBe('action_required');
    // The buyer comes back: the challenged webhook is taken, and changes nothing already recorded.
    const [platformAttempt] = p.standIn.billing.of(shop.domain, id);
    p.standIn.billing.buyerReturns(shop.domain, platformAttempt.id);
    await p.settle();
    expect((await events(shop, id)).filter((t) => t === 'billing.action_required')).toHaveLength(1);
  });

  it('a webhook sent twice records one outcome and sets the date once', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.webhooks.fault({ mode: 'twice' }, { topic: 'subscription_billing_attempts/success', shop: shop.domain });
    await billAndSettle(shop);
    expect(p.standIn.webhooks.deliveries.filter((d) => d.shop === shop.domain && d.topic === 'subscription_billing_attempts/success')[0].attempts).toHaveLength(2);
    expect((await events(shop, id)).filter((t) => t === 'billing.succeeded')).toHaveLength(1);
    expect(p.standIn.calls('subscriptionContractSetNextBillingDate', shop.domain)).toHaveLength(1);
  });

  it('a webhook that never comes: the poller reads the attempt after 10 minutes and records it', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.webhooks.fault({ mode: 'drop' }, { topic: 'subscription_billing_attempts/success', shop: shop.domain });
    await billAndSettle(shop);
    expect((await attempts(shop, id))[0].status).toBe('pending');
    p.clock.advance(11 * 60_000);
    expect(await poller.tick()).toBeGreaterThanOrEqual(1);
    expect((await attempts(shop, id))[0].status).toBe('succeeded');
    expect(platformDate(shop, id)).toBe('2026-12-01T09:00:00.000Z');
  });

  it('a late webhook after the poller recorded the outcome changes nothing', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.webhooks.fault({ mode: 'hold' }, { topic: 'subscription_billing_attempts/failure', shop: shop.domain });
    p.standIn.billing.willAnswer(shop.domain, id, { kind: 'failure', code: 'CARD_DECLINED' }, { count: 1 });
    await billAndSettle(shop);
    p.clock.advance(11 * 60_000);
    await poller.tick();
    p.standIn.webhooks.release();
    await p.settle();
    expect((await events(shop, id)).filter((t) => t === 'billing.failed')).toHaveLength(1);
  });
});

describe('a contract ended on the platform while its attempt was pending', () => {
  it('the success is recorded, and no date is asked of the platform for a cancelled contract', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.webhooks.fault({ mode: 'hold' }, { topic: 'subscription_billing_attempts/success', shop: shop.domain });
    await billAndSettle(shop);
    p.standIn.platform.cancel(shop.domain, id);
    await p.settle();
    expect((await contract(shop, id)).status).toBe('CANCELLED');
    p.standIn.webhooks.release();
    await p.settle();
    expect((await attempts(shop, id)).map((a) => a.status)).toEqual(['succeeded']);
    expect(p.standIn.calls('subscriptionContractSetNextBillingDate', shop.domain)).toHaveLength(0);
  });
});

describe('a shop installed before svc billed on the platform', () => {
  it('subscribes to the billing attempt webhooks at its next install step (what migration 0017 sets off)', async () => {
    const shop = await shopWithDueContracts(0);
    const platformShop = p.standIn.shop(shop.domain);
    platformShop.webhookSubscriptions = platformShop.webhookSubscriptions.filter((w) => !w.topic.startsWith('SUBSCRIPTION_BILLING_ATTEMPTS_'));
    await p.t.ctx.db.withSession((run) => run(`UPDATE platform_installations SET webhooks_registered_at = NULL WHERE shop_id = $1`, [shop.shopId]));
    await p.t.shopify!.installer.continueInstall({ id: shop.shopId, domain: shop.domain });
    const topics = p.standIn.shop(shop.domain).webhookSubscriptions.map((w) => w.topic);
    expect(topics.filter((t) => t.startsWith('SUBSCRIPTION_BILLING_ATTEMPTS_')).sort()).toEqual([
      'SUBSCRIPTION_BILLING_ATTEMPTS_CHALLENGED',
      'SUBSCRIPTION_BILLING_ATTEMPTS_FAILURE',
      'SUBSCRIPTION_BILLING_ATTEMPTS_SUCCESS',
    ]);
    expect(new Set(topics).size).toBe(topics.length);
  });
});

describe('bill_now in platform mode', () => {
  it('creates the platform’s attempt for the current cycle at once, and the outcome arrives by webhook', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    // Not due yet: the cycle is billed now because the integrator asks.
    p.standIn.platform.update(shop.domain, id, { nextBillingDate: new Date(p.clock.now().getTime() + 10 * DAY) });
    await p.settle();
    const r = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/actions`, headers: { ...bearer(shop.key), 'content-type': 'application/json' }, payload: { action: 'bill_now' } });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().billingAttempt.status).toBe('pending');
    expect(p.standIn.billing.of(shop.domain, id)).toHaveLength(1);
    await p.standIn.billing.flush();
    await p.settle();
    expect((await attempts(shop, id)).map((a) => a.status)).toEqual(['succeeded']);
    // The platform keeps dates to the second.
    expect(platformDate(shop, id)!.slice(0, 19)).toBe((await contract(shop, id)).nextBillingDate.slice(0, 19));
  });
});

describe('a storm on the platform', () => {
  it('does not hold the instance\'s webhooks back: the platform\'s cost bucket paces it, not this instance\'s CPU', async () => {
    const shop = await shopWithDueContracts(3);
    const gateway = p.t.ctx.billing!.gateway;
    const seen: boolean[] = [];
    let worker: BillingWorker | null = null;
    const createAttempt: BillingGateway['createAttempt'] = (req) => {
      seen.push(worker!.catchingUp);
      return gateway.createAttempt(req);
    };
    const watched = { ...p.t.ctx, billing: { ...p.t.ctx.billing!, gateway: { outcomeWithinMs: gateway.outcomeWithinMs, createAttempt } } };
    // Batches of one: every round but the last finds a full batch, as a standalone storm does.
    worker = new BillingWorker(watched, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 8, batchSize: 1, shopId: shop.shopId });
    expect(await worker.tick()).toMatchObject({ attempted: 3 });
    expect(seen).toEqual([false, false, false]);
    await p.standIn.billing.flush();
    await p.settle();
  });
});

describe('the cost bucket', () => {
  it('THROTTLED: the attempt waits and is retried, never lost nor doubled', async () => {
    const shop = await shopWithDueContracts(3);
    // Empty until it has refused a request: the first attempt meets THROTTLED however slow the machine is (emptied
    // only, the bucket refilled before a slow round reached it).
    p.standIn.throttle(shop.domain, 1);
    await billAndSettle(shop);
    const throttled = p.standIn.requests.filter((r) => r.shop === shop.domain && JSON.stringify(r.response ?? '').includes('THROTTLED'));
    expect(throttled.length).toBeGreaterThan(0);
    for (const id of shop.ids) {
      expect(p.standIn.billing.of(shop.domain, id)).toHaveLength(1);
      expect((await attempts(shop, id)).map((a) => a.status)).toEqual(['succeeded']);
    }
  });

  it('an answer lost after the platform created the attempt: handed over again with the same key, one attempt there', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    p.standIn.faults.add({ kind: 'hangup' }, { operation: 'subscriptionBillingAttemptCreate', shop: shop.domain, when: 'after' });
    p.standIn.webhooks.fault({ mode: 'drop' }, { topic: 'subscription_billing_attempts/success', shop: shop.domain });
    await billAndSettle(shop);
    expect((await attempts(shop, id)).map((a) => a.status)).toEqual(['pending']);
    // Left unsubmitted, it is handed over again: the platform answers the attempt it made, already settled.
    p.clock.advance(60_000);
    await billAndSettle(shop);
    const keys = p.standIn.calls('subscriptionBillingAttemptCreate', shop.domain).map((c) => (c.args.subscriptionBillingAttemptInput as { idempotencyKey: string }).idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(1);
    expect(p.standIn.billing.of(shop.domain, id)).toHaveLength(1);
    expect((await attempts(shop, id)).map((a) => a.status)).toEqual(['succeeded']);
  });
});

describe('what is never billed', () => {
  it('a paused contract, though the platform would bill it if asked', async () => {
    const shop = await shopWithDueContracts(1);
    const [id] = shop.ids;
    const r = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/actions`, headers: { ...bearer(shop.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    expect(r.statusCode).toBe(200);
    await billAndSettle(shop);
    expect(p.standIn.calls('subscriptionBillingAttemptCreate', shop.domain)).toHaveLength(0);
    expect(await attempts(shop, id)).toHaveLength(0);
  });

  it('a shop that uninstalled: nothing is billed from the moment svc knows, and its pending attempts are not read', async () => {
    const shop = await shopWithDueContracts(2);
    // One attempt stays pending (a challenge), the other fails and has a retry due tomorrow.
    p.standIn.billing.willAnswer(shop.domain, shop.ids[0], { kind: 'challenge' }, { count: 1 });
    p.standIn.billing.willAnswer(shop.domain, shop.ids[1], { kind: 'failure', code: 'INSUFFICIENT_FUNDS' }, { count: 1 });
    await billAndSettle(shop);
    expect((await attempts(shop, shop.ids[1]))[0].status).toBe('failed');
    p.standIn.uninstall(shop.domain);
    await p.settle();
    const before = p.standIn.requests.filter((r) => r.shop === shop.domain).length;
    p.clock.advance(DAY + 60_000);
    await billAndSettle(shop);
    await poller.tick();
    expect(p.standIn.requests.filter((r) => r.shop === shop.domain).length).toBe(before);
    expect(p.standIn.calls('subscriptionBillingAttemptCreate', shop.domain)).toHaveLength(2);
  });
});

describe('dunning’s final action is carried out on the platform', () => {
  const noRetries = { paymentRetries: [], inventoryRetries: { every: 'P1D', max: 0 } };
  it.each([
    ['fail', 'FAILED'],
    ['pause', 'PAUSED'],
    ['cancel', 'CANCELLED'],
  ] as const)('final action %s: the platform’s contract becomes %s', async (finalAction, status) => {
    const shop = await shopWithDueContracts(1, { ...noRetries, finalAction });
    const [id] = shop.ids;
    p.standIn.billing.willAnswer(shop.domain, id, { kind: 'failure', code: 'CARD_DECLINED' }, { count: 1 });
    await billAndSettle(shop);
    expect(p.standIn.contract(shop.domain, id).status).toBe(status);
    expect((await contract(shop, id)).status).toBe(status);
  });

  it('skip: the failed cycle is skipped on the platform and the next date moved past it', async () => {
    const shop = await shopWithDueContracts(1, { ...noRetries, finalAction: 'skip' });
    const [id] = shop.ids;
    p.standIn.billing.willAnswer(shop.domain, id, { kind: 'failure', code: 'INSUFFICIENT_INVENTORY' }, { count: 1 });
    await billAndSettle(shop);
    const skips = p.standIn.calls('subscriptionBillingCycleSkip', shop.domain);
    expect(skips).toHaveLength(1);
    expect(p.standIn.contract(shop.domain, id).skippedCycles.has(1)).toBe(true);
    expect(platformDate(shop, id)).toBe('2026-12-01T09:00:00.000Z');
    expect((await contract(shop, id)).nextBillingDate).toBe('2026-12-01T09:00:00.000Z');
  });
});
