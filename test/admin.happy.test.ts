import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, uniqueShop, type TestApp } from './support/app.js';
import { adminAuth, sql } from './support/fixtures.js';
import { setShopPlan } from '../src/services/shops.js';

/** Admin JSON API behind Settings → API (docs/product.md §6): what a merchant can do. */
describe('admin API: shop and keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const shopOnPlan = async (plan: string) => {
    const domain = uniqueShop('admin');
    await setShopPlan({ ctx: t.ctx, input: { domain, plan } });
    return { domain, headers: await adminAuth(t, domain) };
  };
  const generate = async (headers: Record<string, string>, name?: string) =>
    t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: name === undefined ? {} : { name } });

  it('the first valid session token provisions the shop with plan basic', async () => {
    const domain = uniqueShop('fresh');
    expect(await sql(t, 'SELECT id FROM shops WHERE domain = $1', [domain])).toHaveLength(0);
    const res = await t.inject({ url: '/admin/api/shop', headers: await adminAuth(t, domain) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      shop: { domain, plan: 'basic', apiAccess: { allowed: false, reason: 'plan_required', freePeriodEndsAt: null } },
      limits: { maxActiveKeys: 5, maxWebhookEndpoints: 10 },
      platform: { mode: 'standalone', import: null, canUpgrade: false },
    });
    expect(await sql(t, 'SELECT plan FROM shops WHERE domain = $1', [domain])).toEqual([{ plan: 'basic' }]);
    // A second request finds the same shop, it does not create another.
    await t.inject({ url: '/admin/api/shop', headers: await adminAuth(t, domain) });
    expect(await sql(t, 'SELECT count(*)::int AS n FROM shops WHERE domain = $1', [domain])).toEqual([{ n: 1 }]);
  });

  it('GET /admin/api/shop: enterprise has access', async () => {
    const { domain, headers } = await shopOnPlan('enterprise');
    const res = await t.inject({ url: '/admin/api/shop', headers });
    expect(res.json()).toEqual({
      shop: { domain, plan: 'enterprise', apiAccess: { allowed: true, reason: 'enterprise', freePeriodEndsAt: null } },
      limits: { maxActiveKeys: 5, maxWebhookEndpoints: 10 },
      platform: { mode: 'standalone', import: null, canUpgrade: false },
    });
  });

  it('GET /admin/api/shop: the free period gives a basic shop access and says until when', async () => {
    const freeUntil = new Date(t.clock.now().getTime() + 7 * 86_400_000);
    const free = await startTestApp({ database: t.database, clock: t.clock, freeUntil });
    try {
      const { domain, headers } = await shopOnPlan('basic');
      const res = await free.inject({ url: '/admin/api/shop', headers });
      expect(res.json().shop).toEqual({
        domain,
        plan: 'basic',
        apiAccess: { allowed: true, reason: 'free_period', freePeriodEndsAt: freeUntil.toISOString() },
      });
      expect(res.json().shop.apiAccess.freePeriodEndsAt).toMatch(/Z$/);
      // During the free period a basic shop may generate keys.
      expect((await free.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: {} })).statusCode).toBe(201);
    } finally {
      await free.close();
    }
  });

  it('POST /admin/api/keys returns 201 with the key and its secret; the name is optional', async () => {
    const { headers } = await shopOnPlan('enterprise');
    const named = await generate(headers, 'backend');
    expect(named.statusCode).toBe(201);
    expect(named.headers['cache-control']).toBe('no-store');
    const body = named.json();
    expect(Object.keys(body).sort()).toEqual(['key', 'secret']);
    expect(body.secret).toMatch(/^svc_live_[0-9A-Za-z]{49}$/);
    expect(body.key).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'backend',
      fingerprint: expect.stringMatching(/^[0-9a-f]{12}$/),
      access: 'read_write',
      permissions: { contracts: 'write', billing: 'write', webhooks: 'write', bulk_jobs: 'write' },
      status: 'active',
      createdAt: t.clock.now().toISOString(),
      lastUsedAt: null,
      revokedAt: null,
      revokedReason: null,
      leakedAt: null,
      leakedUrl: null,
    });

    const unnamed = await t.inject({ method: 'POST', url: '/admin/api/keys', headers });
    expect(unnamed.statusCode).toBe(201);
    expect(unnamed.json().key.name).toBeNull();
    const blank = await generate(headers, '   ');
    expect(blank.json().key.name).toBeNull();
  });

  it('GET /admin/api/keys lists active and revoked keys, newest first (where the page puts a new key), with activeCount', async () => {
    const { headers } = await shopOnPlan('enterprise');
    const a = (await generate(headers, 'a')).json();
    t.clock.advance(1000);
    const b = (await generate(headers, 'b')).json();
    t.clock.advance(1000);
    const c = (await generate(headers, 'c')).json();
    t.clock.advance(1000);
    const revoked = await t.inject({ method: 'POST', url: `/admin/api/keys/${a.key.id}/revoke`, headers });
    expect(revoked.statusCode).toBe(200);

    const res = await t.inject({ url: '/admin/api/keys', headers });
    expect(res.statusCode).toBe(200);
    const list = res.json();
    expect(list.activeCount).toBe(2);
    expect(list.keys.map((k: { name: string }) => k.name)).toEqual(['c', 'b', 'a']);
    expect(list.keys[2]).toMatchObject({ id: a.key.id, status: 'revoked', revokedAt: t.clock.now().toISOString(), revokedReason: 'revoked', leakedUrl: null, fingerprint: a.key.fingerprint });
    expect(list.keys[1]).toMatchObject({ id: b.key.id, status: 'active', revokedAt: null, revokedReason: null });
    expect(list.keys[0]).toMatchObject({ id: c.key.id, status: 'active' });
    for (const k of list.keys) {
      expect(Object.keys(k).sort()).toEqual(['access', 'createdAt', 'fingerprint', 'id', 'lastUsedAt', 'leakedAt', 'leakedUrl', 'name', 'permissions', 'revokedAt', 'revokedReason', 'status']);
    }
  });

  it('revoke answers 200 with the revoked key; revoking again is a no-op success', async () => {
    const { headers } = await shopOnPlan('enterprise');
    const { key } = (await generate(headers)).json();
    const first = await t.inject({ method: 'POST', url: `/admin/api/keys/${key.id}/revoke`, headers });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ key: { ...key, status: 'revoked', revokedAt: t.clock.now().toISOString(), revokedReason: 'revoked' } });
    const revokedAt = first.json().key.revokedAt;

    t.clock.advance(60_000);
    const again = await t.inject({ method: 'POST', url: `/admin/api/keys/${key.id}/revoke`, headers });
    expect(again.statusCode).toBe(200);
    expect(again.json().key).toMatchObject({ status: 'revoked', revokedAt });
  });

  it('at most 5 active keys: the 6th is 409 key_limit_reached; after a revoke a new one can be generated', async () => {
    const { headers } = await shopOnPlan('enterprise');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await generate(headers, `k${i}`);
      expect(res.statusCode).toBe(201);
      ids.push(res.json().key.id);
    }
    const sixth = await generate(headers, 'k5');
    expect(sixth.statusCode).toBe(409);
    expect(sixth.json().error.code).toBe('key_limit_reached');
    expect(sixth.json().error.message).toMatch(/5/);

    await t.inject({ method: 'POST', url: `/admin/api/keys/${ids[2]}/revoke`, headers });
    const again = await generate(headers, 'k5');
    expect(again.statusCode).toBe(201);
    const list = (await t.inject({ url: '/admin/api/keys', headers })).json();
    expect(list.activeCount).toBe(5);
    expect(list.keys).toHaveLength(6);
  });

  it('without API access: generation is 403 plan_required, revocation is still allowed', async () => {
    const { domain, key } = await t.shopWithKey('basic');
    const headers = await adminAuth(t, domain);
    const gen = await generate(headers, 'nope');
    expect(gen.statusCode).toBe(403);
    expect(gen.json().error.code).toBe('plan_required');
    expect(gen.json().error.message).toMatch(/Enterprise/);

    const [{ id }] = (await t.inject({ url: '/admin/api/keys', headers })).json().keys;
    const revoke = await t.inject({ method: 'POST', url: `/admin/api/keys/${id}/revoke`, headers });
    expect(revoke.statusCode).toBe(200);
    expect(revoke.json().key.status).toBe('revoked');
    expect(key).toMatch(/^svc_live_/);
  });

  it('the contracts page: the shop\'s contracts (only its own) and a contract\'s history, actor included', async () => {
    const { domain, key, shopId, fingerprint } = await t.shopWithKey();
    const other = await t.shopWithKey();
    await t.seed(other.shopId, 2);
    const [c] = await t.seed(shopId, 1);
    await t.inject({
      method: 'POST',
      url: `/api/v1/subscription-contracts/${c.id}/actions`,
      headers: { authorization: `Bearer ${key}` },
      payload: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' },
    });
    const headers = await adminAuth(t, domain);
    const list = await t.inject({ url: '/admin/api/contracts', headers });
    expect(list.statusCode).toBe(200);
    expect(list.json().contracts.map((x: { id: string }) => x.id)).toEqual([c.id]);
    expect(list.json().contracts[0]).toMatchObject({ status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z' });
    const events = await t.inject({ url: `/admin/api/contracts/${c.id}/events`, headers });
    expect(events.json().events[0]).toMatchObject({ type: 'contract.paused', actor: { type: 'api_key', keyFingerprint: fingerprint } });
    const foreign = (await t.inject({ url: '/admin/api/contracts', headers: await adminAuth(t, other.domain) })).json().contracts;
    expect(foreign.map((x: { id: string }) => x.id)).not.toContain(c.id);
  });

  it('a key generated in the admin works on the API right away', async () => {
    const { headers } = await shopOnPlan('enterprise');
    const { secret } = (await generate(headers)).json();
    const res = await t.inject({ url: '/api/v1/subscription-contracts', headers: { authorization: `Bearer ${secret}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ contracts: [], nextCursor: null });
  });
});
