import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError, sql } from './support/fixtures.js';

/** The access policy over time (docs/product.md §2) and the last-used stamp (docs/product.md §1). */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('plan changes', () => {
  it('a shop that leaves enterprise keeps its keys: 403 plan_required, then works again when the plan returns', async () => {
    const { key, domain, shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(key) })).statusCode).toBe(200);

    await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'basic' } });
    for (const req of [
      { url: `${API}/${c.id}` },
      { url: API },
      { url: `${API}/${c.id}/events` },
      { method: 'POST' as const, url: `${API}/${c.id}/actions`, payload: { action: 'skip' } },
    ]) {
      const res = await t.inject({ ...req, headers: bearer(key) });
      const error = expectError(res, 403, 'plan_required');
      expect(error.message).toMatch(/external API access requires the Enterprise plan/i);
      expect(res.headers['www-authenticate']).toBeUndefined();
    }
    expect((await sql(t, 'SELECT revoked_at FROM api_keys WHERE shop_id = $1', [shopId]))[0].revoked_at).toBeNull();
    expect((await t.inject({ url: `${API}/${c.id}/events`, headers: bearer(key) })).statusCode).toBe(403);

    await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'enterprise' } });
    const back = await t.inject({ url: `${API}/${c.id}`, headers: bearer(key) });
    expect(back.statusCode).toBe(200);
    expect(back.json().contract.id).toBe(c.id);
    // Nothing the 403s attempted happened.
    expect((await t.inject({ url: `${API}/${c.id}/events`, headers: bearer(key) })).json().events).toEqual([]);
  });

  it('the free period lets a basic shop in until its moment, then 403', async () => {
    const freeUntil = new Date(t.clock.now().getTime() + 3_600_000);
    const free = await startTestApp({ database: t.database, clock: t.clock, freeUntil });
    const start = t.clock.now();
    try {
      const { key } = await t.shopWithKey('basic');
      expect((await free.inject({ url: API, headers: bearer(key) })).statusCode).toBe(200);
      // The app without a free period refuses the same key.
      expectError(await t.inject({ url: API, headers: bearer(key) }), 403, 'plan_required');

      t.clock.set(new Date(freeUntil.getTime() - 1));
      expect((await free.inject({ url: API, headers: bearer(key) })).statusCode).toBe(200);
      t.clock.set(freeUntil);
      expectError(await free.inject({ url: API, headers: bearer(key) }), 403, 'plan_required');
      t.clock.advance(86_400_000);
      expectError(await free.inject({ url: API, headers: bearer(key) }), 403, 'plan_required');
    } finally {
      t.clock.set(start);
      await free.close();
    }
  });
});

describe('lastUsedAt', () => {
  const lastUsed = async (shopId: string) =>
    (await sql<{ last_used_at: Date | null }>(t, 'SELECT last_used_at FROM api_keys WHERE shop_id = $1', [shopId]))[0].last_used_at;

  it('is set on first use, not rewritten within 60 s, and updated once the clock moves 61 s', async () => {
    const { key, shopId } = await t.shopWithKey();
    expect(await lastUsed(shopId)).toBeNull();
    const first = t.clock.now();
    await t.inject({ url: API, headers: bearer(key) });
    expect((await lastUsed(shopId))?.toISOString()).toBe(first.toISOString());

    t.clock.advance(30_000);
    await t.inject({ url: API, headers: bearer(key) });
    t.clock.advance(29_000);
    await t.inject({ url: API, headers: bearer(key) });
    expect((await lastUsed(shopId))?.toISOString()).toBe(first.toISOString());

    t.clock.set(new Date(first.getTime() + 61_000));
    await t.inject({ url: API, headers: bearer(key) });
    expect((await lastUsed(shopId))?.toISOString()).toBe(new Date(first.getTime() + 61_000).toISOString());
  });

  it('is shown in the admin key list', async () => {
    const { key, shopId, domain } = await t.shopWithKey();
    await t.inject({ url: API, headers: bearer(key) });
    const list = (await t.inject({ url: '/admin/api/keys', headers: { authorization: `Bearer ${await t.sessionToken(domain)}` } })).json();
    expect(list.keys[0].lastUsedAt).toBe((await lastUsed(shopId))?.toISOString());
  });

  it('a refused request (403) does not count as a use', async () => {
    const { key, shopId } = await t.shopWithKey('basic');
    await t.inject({ url: API, headers: bearer(key) });
    expect(await lastUsed(shopId)).toBeNull();
  });
});
