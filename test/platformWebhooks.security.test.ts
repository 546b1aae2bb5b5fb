import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setShopPlan } from '../src/services/shops.js';
import { bearer } from './support/app.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';
import type { Delivery } from './support/shopify/webhooks.js';

/**
 * Webhooks in trust nothing the platform's HMAC does not cover: the topic, the shop and the webhook id travel in
 * headers anyone holding one signed body can change. Each attack here re-sends a body the platform really signed.
 */
let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform({ timeoutMs: 1500 });
});
afterAll(async () => {
  await p?.close();
});
beforeEach(() => {
  p.standIn.faults.clear();
  p.standIn.webhooks.clearFaults();
});

const get = (key: string, url: string) => p.t.inject({ method: 'GET', url, headers: bearer(key) });
const contracts = async (s: InstalledShop) => (await get(s.key, '/api/v1/subscription-contracts')).statusCode;
const count = async (sql: string, params: unknown[]) => (await p.t.ctx.db.withSession((run) => run<{ n: number }>(sql, params)))[0].n;
const rowsOfShop = (s: InstalledShop) => count(`SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1`, [s.shopId]);
const shopRow = (s: InstalledShop) => count(`SELECT count(*)::int AS n FROM shops WHERE domain = $1`, [s.domain]);

/** The platform's last delivery of a topic for a shop: its raw body, exactly as signed, and its headers. */
function delivered(shop: string, topic: string): Delivery {
  const d = p.standIn.webhooks.deliveries.filter((x) => x.shop === shop && x.topic === topic).at(-1);
  if (!d) throw new Error(`no ${topic} delivery for ${shop}`);
  return d;
}

/** Sends a delivery's signed body again, with its signature, under headers of the sender's choosing. */
async function resend(d: Delivery, headers: { topic?: string; shop?: string; id?: string; triggeredAt?: string } = {}) {
  const res = await fetch(`${p.base}/webhooks/shopify`, {
    method: 'POST',
    body: d.body,
    headers: {
      ...d.headers,
      'X-Shopify-Topic': headers.topic ?? d.topic,
      'X-Shopify-Shop-Domain': headers.shop ?? d.shop,
      'X-Shopify-Webhook-Id': headers.id ?? randomUUID(),
      'X-Shopify-Triggered-At': headers.triggeredAt ?? d.headers['X-Shopify-Triggered-At'],
    },
  });
  return { status: res.status, body: await res.json() };
}

const warnings = () => p.t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 40);

describe('the shop a body names, and the shape of its topic', () => {
  it('a signed body of one shop, re-sent as shop/redact or app/uninstalled of another under a fresh id, is acknowledged and changes nothing', async () => {
    const victim = await p.install({ contracts: 20 });
    const other = await p.install({ contracts: 1 });
    // Bodies the platform really signed: another shop's privacy request, its uninstall, and a contract signal.
    p.standIn.sendCompliance(other.domain, 'customers/redact', { customer: { id: 7, email: 'leaked-body@example.com' }, orders: [1] });
    p.standIn.platform.pause(other.domain, other.contractIds[0]);
    await p.settle();
    const redact = delivered(other.domain, 'customers/redact');
    const signal = delivered(other.domain, 'subscription_contracts/pause');
    p.standIn.uninstall(other.domain);
    await p.settle();
    const uninstall = delivered(other.domain, 'app/uninstalled');

    const attacks = [
      { d: redact, topic: 'shop/redact', why: /shape of shop\/redact \(at customer, a field shop\/redact does not have\)/ },
      { d: redact, topic: 'customers/redact', why: /names another shop/ },
      { d: uninstall, topic: 'app/uninstalled', why: /names another shop/ },
      { d: signal, topic: 'shop/redact', why: /shape of shop\/redact/ },
      { d: signal, topic: 'app/uninstalled', why: /shape of app\/uninstalled/ },
      { d: redact, topic: 'customers/data_request', why: /shape of customers\/data_request/ },
      { d: signal, topic: 'orders/create', why: /not a topic svc subscribes to/ },
    ];
    const before = warnings().length;
    for (const a of attacks) {
      const id = randomUUID();
      const res = await resend(a.d, { topic: a.topic, shop: victim.domain, id });
      // 200: the platform would retry a non-2xx for hours; nothing is stored, nothing is done.
      expect(res, a.topic).toEqual({ status: 200, body: { received: true, duplicate: false, ignored: true } });
      expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1`, [id])).toBe(0);
      const line = warnings().find((w) => w.webhookId === id);
      expect(line, a.topic).toMatchObject({ topic: a.topic, shop: victim.domain, reason: expect.stringMatching(a.why) });
    }
    await p.settle();
    expect(await rowsOfShop(victim)).toBe(20);
    expect(await shopRow(victim)).toBe(1);
    expect(await contracts(victim)).toBe(200);
    expect((await p.t.shopify!.installer.installation(victim.shopId))?.accessToken).not.toBeNull();
    // The warnings say what was refused, never what the body held.
    const logged = JSON.stringify(warnings().slice(before));
    expect(logged).not.toContain('leaked-body@example.com');
    expect(logged).not.toContain(`SubscriptionContract/${other.contractIds[0]}"`);
  });

  it('a shop\'s own signed customers/redact, re-sent as its shop/redact: acknowledged, not stored as shop/redact, nothing erased', async () => {
    const s = await p.install({ contracts: 3 });
    p.standIn.sendCompliance(s.domain, 'customers/redact', { customer: { id: 7 }, orders: [1] });
    await p.settle();
    const redact = delivered(s.domain, 'customers/redact');
    // The shop's uninstall is confirmed, as a real shop/redact would find it: only the body's shape stands in the way.
    p.standIn.uninstall(s.domain);
    await p.settle();
    const id = randomUUID();
    const res = await resend(redact, { topic: 'shop/redact', id });
    expect(res).toEqual({ status: 200, body: { received: true, duplicate: false, ignored: true } });
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1 OR (shop_domain = $2 AND topic = 'shop/redact')`, [id, s.domain])).toBe(0);
    expect(warnings().find((w) => w.webhookId === id)).toMatchObject({ topic: 'shop/redact', reason: 'the body does not have the shape of shop/redact (at customer, a field shop/redact does not have)' });
    await p.settle();
    expect(await shopRow(s)).toBe(1);
    expect(await rowsOfShop(s)).toBe(3);
  });

  it('the platform’s own deliveries of every topic pass the checks and are acted on', async () => {
    const s = await p.install({ contracts: 2, plan: 'basic' });
    const before = warnings().length;
    const token = p.standIn.sessionToken(s.domain);
    await p.t.inject({ method: 'POST', url: '/admin/api/billing/upgrade', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: {} });
    p.standIn.approveAppSubscription(s.domain); // app_subscriptions/update
    p.standIn.platform.cancel(s.domain, s.contractIds[0]); // subscription_contracts/cancel
    p.standIn.platform.skip(s.domain, s.contractIds[1], { index: 3 }); // subscription_billing_cycles/skip
    p.standIn.sendCompliance(s.domain, 'customers/data_request', { customer: { id: 42 }, dataRequestId: 9 });
    await p.settle();
    expect(warnings().slice(before)).toEqual([]);
    expect(await contracts(s)).toBe(200); // the plan came from the platform
    expect((await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`)).json().contract.status).toBe('CANCELLED');
    expect(await count(`SELECT count(*)::int AS n FROM compliance_requests WHERE shop_domain = $1 AND customer_id = '42'`, [s.domain])).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1 AND processed_at IS NULL`, [s.domain])).toBe(0);
  });
});

describe('a body already received', () => {
  it('is a duplicate whatever its webhook id: not stored again, not acted on again', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.platform.pause(s.domain, s.contractIds[0]);
    p.standIn.sendCompliance(s.domain, 'customers/data_request', { customer: { id: 5 }, dataRequestId: 77 });
    await p.settle();
    for (const topic of ['subscription_contracts/pause', 'customers/data_request']) {
      const d = delivered(s.domain, topic);
      expect(await resend(d), topic).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1 AND topic = $2`, [s.domain, topic])).toBe(1);
    }
    // Several at once, each with its own id: one is stored.
    const d = delivered(s.domain, 'customers/data_request');
    p.standIn.sendCompliance(s.domain, 'customers/data_request', { customer: { id: 5 }, dataRequestId: 78 });
    await p.standIn.webhooks.flush();
    const fresh = delivered(s.domain, 'customers/data_request');
    expect(fresh.body).not.toBe(d.body);
    const answers = await Promise.all(Array.from({ length: 5 }, () => resend(fresh)));
    expect(answers.every((a) => a.body.duplicate)).toBe(true); // the platform's own delivery came first
    await p.settle();
    expect(await count(`SELECT count(*)::int AS n FROM compliance_requests WHERE shop_domain = $1`, [s.domain])).toBe(2);
  });
});

describe('app/uninstalled is acted on only when the platform refuses the shop’s token', () => {
  it('a stale or forged uninstall of a shop that is installed changes nothing; the platform’s own, with the very same body, does', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.uninstall(s.domain);
    await p.settle();
    expect(await contracts(s)).toBe(403);
    const old = delivered(s.domain, 'app/uninstalled');
    // The merchant comes back.
    p.standIn.install(s.domain);
    await p.openAdmin(s.domain);
    await setShopPlan({ ctx: p.t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    expect(await contracts(s)).toBe(200);

    // The old uninstall again, under a fresh id and a fresh X-Shopify-Triggered-At (neither is signed).
    const asked = () => p.standIn.requests.filter((r) => r.shop === s.domain && r.operationName === 'SvcAppInstallation').length;
    const before = asked();
    expect(await resend(old, { triggeredAt: p.clock.now().toISOString() })).toEqual({ status: 200, body: { received: true, duplicate: false } });
    await p.settle();
    expect(asked() - before).toBe(1); // one cheap call, with the shop's token: answered
    expect(await contracts(s)).toBe(200);
    expect((await p.t.shopify!.installer.installation(s.shopId))?.accessToken).not.toBeNull();
    expect(p.standIn.tokens.liveAccessTokens(s.domain).length).toBeGreaterThan(0);
    expect(warnings().find((w) => w.shop === s.domain && w.topic === 'app/uninstalled')?.msg).toMatch(/still installed/);

    // The merchant uninstalls again: the platform's body is the same as before, and this time the platform confirms.
    p.standIn.uninstall(s.domain);
    await p.settle();
    expect(delivered(s.domain, 'app/uninstalled').body).toBe(old.body);
    const res = await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('app_not_installed');
  });

  it('a platform that cannot be asked: the uninstall waits and is tried again, never acted on unconfirmed', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.faults.add({ kind: 'error', status: 503 }, { operation: 'currentAppInstallation', shop: s.domain, count: Infinity });
    p.standIn.uninstall(s.domain);
    await p.settle();
    expect(await contracts(s)).toBe(200); // reads still served: nothing confirmed the uninstall
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1 AND topic = 'app/uninstalled' AND processed_at IS NULL AND last_error LIKE '%HTTP 503%'`, [s.domain])).toBe(1);
    p.standIn.faults.clear();
    p.clock.advance(10_000); // the retry is due
    await p.settle();
    expect(await contracts(s)).toBe(403);
  });

  it('a refusal another call met first confirms it: svc holds no token left to ask with', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.webhooks.fault({ mode: 'hold' }, { shop: s.domain, topic: 'app/uninstalled' });
    p.standIn.uninstall(s.domain);
    // An action meets the revoked token (a 401, then a refused refresh): svc forgets the tokens.
    const res = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    expect(res.json().error.code).toBe('app_not_installed');
    expect((await p.t.shopify!.installer.installation(s.shopId))?.accessToken).toBeNull();
    expect(await contracts(s)).toBe(200);
    p.standIn.webhooks.release();
    await p.settle();
    expect(await contracts(s)).toBe(403);
  });
});

describe('shop/redact is acted on only for a shop whose uninstall is confirmed', () => {
  it('for a shop that is installed, nothing is deleted; after its uninstall, the same body deletes every row', async () => {
    const s = await p.install({ contracts: 3 });
    p.standIn.sendCompliance(s.domain, 'shop/redact');
    await p.settle();
    expect(await rowsOfShop(s)).toBe(3);
    expect(await contracts(s)).toBe(200);
    expect(warnings().find((w) => w.shop === s.domain && w.topic === 'shop/redact')?.msg).toMatch(/still installed/);
    const early = delivered(s.domain, 'shop/redact');

    p.standIn.uninstall(s.domain);
    await p.settle();
    p.standIn.sendCompliance(s.domain, 'shop/redact');
    await p.settle();
    expect(delivered(s.domain, 'shop/redact').body).toBe(early.body);
    expect(await rowsOfShop(s)).toBe(0);
    expect(await shopRow(s)).toBe(0);
  });

  it('for a shop whose app/uninstalled never came, the platform is asked then', async () => {
    const s = await p.install({ contracts: 2 });
    p.standIn.webhooks.fault({ mode: 'drop' }, { shop: s.domain, topic: 'app/uninstalled' });
    p.standIn.uninstall(s.domain);
    p.standIn.sendCompliance(s.domain, 'shop/redact');
    await p.settle();
    expect(await rowsOfShop(s)).toBe(0);
    expect(await shopRow(s)).toBe(0);
  });
});
