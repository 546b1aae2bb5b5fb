import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, uniqueShop, type TestApp } from './support/app.js';
import { adminAuth, expectError, sql } from './support/fixtures.js';
import { setShopPlan } from '../src/services/shops.js';

/** The admin API's refusals, each in the error envelope. */
describe('admin API: errors', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const enterpriseShop = async () => {
    const domain = uniqueShop('adm-err');
    await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'enterprise' } });
    return { domain, headers: await adminAuth(t, domain) };
  };

  it('revoking an unknown key id is 404 not_found', async () => {
    const { headers } = await enterpriseShop();
    for (const id of [randomUUID(), 'not-a-uuid', '1', "x' OR '1'='1"]) {
      const res = await t.inject({ method: 'POST', url: `/admin/api/keys/${encodeURIComponent(id)}/revoke`, headers });
      expectError(res, 404, 'not_found');
    }
  });

  it("another shop's key id is 404, exactly like a missing one, and the key stays active", async () => {
    const victim = await t.shopWithKey();
    const [{ id }] = await sql<{ id: string }>(t, 'SELECT id FROM api_keys WHERE shop_id = $1', [victim.shopId]);
    const { headers } = await enterpriseShop();
    const foreign = await t.inject({ method: 'POST', url: `/admin/api/keys/${id}/revoke`, headers });
    const missing = await t.inject({ method: 'POST', url: `/admin/api/keys/${randomUUID()}/revoke`, headers });
    expectError(foreign, 404, 'not_found');
    expect(foreign.json().error.message).toBe(missing.json().error.message);
    expect(await sql(t, 'SELECT revoked_at FROM api_keys WHERE id = $1', [id])).toEqual([{ revoked_at: null }]);
    const stillWorks = await t.inject({ url: '/api/v1/subscription-contracts', headers: { authorization: `Bearer ${victim.key}` } });
    expect(stillWorks.statusCode).toBe(200);
    // And another shop's list never shows it.
    const list = (await t.inject({ url: '/admin/api/keys', headers })).json();
    expect(list).toEqual({ keys: [], activeCount: 0 });
  });

  it('a name over 100 characters, a non-string name or an unknown field is 400 invalid_request', async () => {
    const { headers } = await enterpriseShop();
    const long = expectError(await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'x'.repeat(101) } }), 400, 'invalid_request');
    expect(long.details?.[0].path).toBe('name');
    const typed = expectError(await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 42 } }), 400, 'invalid_request');
    expect(typed.details?.[0].path).toBe('name');
    const unknown = expectError(await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'a', scope: 'all' } }), 400, 'invalid_request');
    expect(JSON.stringify(unknown.details)).toContain('scope');
    expect((await t.inject({ url: '/admin/api/keys', headers })).json().keys).toHaveLength(0);
    // 100 characters exactly is fine.
    expect((await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'x'.repeat(100) } })).statusCode).toBe(201);
  });

  it('a 6th active key is 409 key_limit_reached and nothing is created', async () => {
    const { headers, domain } = await enterpriseShop();
    for (let i = 0; i < 5; i++) await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: {} });
    expectError(await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: {} }), 409, 'key_limit_reached');
    const [{ n }] = await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM api_keys k JOIN shops s ON s.id = k.shop_id WHERE s.domain = $1', [domain]);
    expect(n).toBe(5);
  });

  it('unknown admin routes and wrong methods get the envelope', async () => {
    const { headers } = await enterpriseShop();
    expectError(await t.inject({ url: '/admin/api/nope', headers }), 404, 'not_found');
    const res = await t.inject({ method: 'DELETE', url: '/admin/api/keys', headers });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe('GET, POST');
  });
});
