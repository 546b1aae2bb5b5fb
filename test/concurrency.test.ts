import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addInterval } from '../src/domain/time.js';
import { generateKey } from '../src/services/generateKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, uniqueShop, type TestApp } from './support/app.js';
import { onPostgres } from './support/db.js';
import { API, adminAuth, contractRow, eventRows, insertContract, secondInstance, sql } from './support/fixtures.js';

/**
 * Real concurrency, no mocks: the key limit and contract actions under parallel requests (docs/product.md §1, §3). On
 * PostgreSQL the requests are spread over two app instances with separate connection pools.
 */

let t: TestApp;
let other: Awaited<ReturnType<typeof secondInstance>>;
beforeAll(async () => {
  t = await startTestApp();
  other = await secondInstance(t);
});
afterAll(async () => {
  await other.close();
  await t.close();
});

async function shopWithActiveKeys(n: number) {
  const domain = uniqueShop('race');
  const shop = await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'enterprise' } });
  for (let i = 0; i < n; i++) await generateKey({ ctx: t.ctx, input: { shopId: shop.id, name: `pre-${i}` } });
  return { shopId: shop.id, headers: await adminAuth(t, domain) };
}

const activeKeys = async (shopId: string) =>
  (await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM api_keys WHERE shop_id = $1 AND revoked_at IS NULL', [shopId]))[0].n;

describe('the 5-key limit under concurrent generation', () => {
  it('20 parallel generations on a shop with 2 active keys: exactly 3 × 201 and 17 × 409', async () => {
    const { shopId, headers } = await shopWithActiveKeys(2);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: `p${i}` } })),
    );
    const codes = results.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 201)).toHaveLength(3);
    expect(codes.filter((c) => c === 409)).toHaveLength(17);
    for (const r of results.filter((r) => r.statusCode === 409)) expect(r.json().error.code).toBe('key_limit_reached');
    expect(await activeKeys(shopId)).toBe(5);
    // Every success handed out a distinct, working secret.
    const secrets = results.filter((r) => r.statusCode === 201).map((r) => r.json().secret);
    expect(new Set(secrets).size).toBe(3);
  });

  it(`spread across two app instances${onPostgres() ? ' on two connection pools' : ''}: still exactly the free slots`, async () => {
    const { shopId, headers } = await shopWithActiveKeys(2);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? other : t).inject({ method: 'POST', url: '/admin/api/keys', headers, payload: {} })),
    );
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes).toEqual([...Array(3).fill(201), ...Array(17).fill(409)]);
    expect(await activeKeys(shopId)).toBe(5);
  });

  it('revocations and generations racing never exceed 5 active keys', async () => {
    const { shopId, headers } = await shopWithActiveKeys(5);
    const ids = (await t.inject({ url: '/admin/api/keys', headers })).json().keys.map((k: { id: string }) => k.id);
    const results = await Promise.all([
      ...ids.slice(0, 2).map((id: string) => other.inject({ method: 'POST', url: `/admin/api/keys/${id}/revoke`, headers })),
      ...Array.from({ length: 10 }, (_, i) => (i % 2 ? other : t).inject({ method: 'POST', url: '/admin/api/keys', headers, payload: {} })),
    ]);
    expect(results.slice(0, 2).map((r) => r.statusCode)).toEqual([200, 200]);
    const created = results.slice(2).filter((r) => r.statusCode === 201).length;
    expect(created).toBeLessThanOrEqual(2);
    expect(await activeKeys(shopId)).toBe(3 + created);
    expect(await activeKeys(shopId)).toBeLessThanOrEqual(5);
  });
});

describe('actions on one contract are serialised', () => {
  it('10 parallel skips: 10 × 200, 10 contract.skipped events, nextBillingDate exactly 10 intervals later', async () => {
    const { key, shopId } = await t.shopWithKey();
    const start = new Date('2026-12-01T00:00:00.000Z');
    const c = await insertContract(t, shopId, { nextBillingDate: start, billingInterval: 'WEEK', billingIntervalCount: 1 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? other : t).inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'skip' } })),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
    const expected = addInterval(start, 'WEEK', 10).toISOString();
    expect((await contractRow(t, c.id)).nextBillingDate.toISOString()).toBe(expected);
    const events = await eventRows(t, c.id);
    expect(events.map((e) => e.type)).toEqual(Array(10).fill('contract.skipped'));
    // Each event starts where the previous one ended: no two skips read the same date.
    for (let i = 1; i < events.length; i++) expect(events[i].data.previousNextBillingDate).toBe(events[i - 1].data.nextBillingDate);
    expect(events[9].data.nextBillingDate).toBe(expected);
    // The responses saw ten different dates, one per step.
    expect(new Set(results.map((r) => r.json().contract.nextBillingDate)).size).toBe(10);
  });

  it('parallel pause and cancel: whatever the order, the final state and the events agree', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const bodies = [{ action: 'pause' }, { action: 'cancel' }, { action: 'skip' }, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, { action: 'resume' }];
    const results = await Promise.all(
      bodies.map((payload, i) => (i % 2 ? other : t).inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload })),
    );
    const succeeded = results.filter((r) => r.statusCode === 200).length;
    for (const r of results) expect([200, 409]).toContain(r.statusCode);
    const events = await eventRows(t, c.id);
    expect(events).toHaveLength(succeeded);
    for (let i = 1; i < events.length; i++) expect(events[i].fromStatus).toBe(events[i - 1].toStatus);
    expect((await contractRow(t, c.id)).status).toBe(events[events.length - 1].toStatus);
  });
});
