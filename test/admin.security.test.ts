import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, TEST_CREDENTIALS, uniqueShop, type TestApp } from './support/app.js';
import { adminAuth, expectError, keyFragments, sql } from './support/fixtures.js';
import { setShopPlan } from '../src/services/shops.js';

/** Who may use the admin API (docs/product.md §5, §6): a valid platform session token and nothing else. */

type Claims = Record<string, unknown>;

/** Signs a token like the platform, with every claim overridable (undefined removes it). */
async function token(t: TestApp, shop: string, over: Claims = {}, secret = TEST_CREDENTIALS.secret, alg = 'HS256'): Promise<string> {
  const now = Math.floor(t.clock.now().getTime() / 1000);
  const claims: Claims = {
    iss: `https://${shop}/admin`,
    dest: `https://${shop}`,
    aud: TEST_CREDENTIALS.apiKey,
    sub: '42',
    exp: now + 60,
    nbf: now - 5,
    iat: now - 5,
    jti: randomUUID(),
    sid: 'session',
    ...over,
  };
  for (const k of Object.keys(claims)) if (claims[k] === undefined) delete claims[k];
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('admin API: session tokens', () => {
  let shop: string;
  beforeAll(async () => {
    shop = uniqueShop('sess');
    await setShopPlan({ ctx: t.ctx, input: { domain: shop, plan: 'enterprise' } });
  });

  const asAdmin = (authorization: string | undefined) =>
    t.inject({ url: '/admin/api/keys', headers: authorization === undefined ? {} : { authorization } });

  it('a well-formed platform token is accepted (the baseline the cases below differ from)', async () => {
    expect((await asAdmin(`Bearer ${await token(t, shop)}`)).statusCode).toBe(200);
  });

  const cases: [string, (t: TestApp) => Promise<string | undefined>][] = [
    ['no Authorization header', async () => undefined],
    ['a Basic scheme', async (t) => `Basic ${Buffer.from(`x:${await token(t, shop)}`).toString('base64')}`],
    ['a wrong secret', async (t) => `Bearer ${await token(t, shop, {}, 'another-secret-0123456789abcdef')}`],
    ['a wrong aud', async (t) => `Bearer ${await token(t, shop, { aud: 'another-app' })}`],
    ['a token expired by the clock', async (t) => `Bearer ${await token(t, shop, { exp: Math.floor(t.clock.now().getTime() / 1000) - 60 })}`],
    ['nbf in the future', async (t) => `Bearer ${await token(t, shop, { nbf: Math.floor(t.clock.now().getTime() / 1000) + 600 })}`],
    ['no exp', async (t) => `Bearer ${await token(t, shop, { exp: undefined })}`],
    ['no jti', async (t) => `Bearer ${await token(t, shop, { jti: undefined })}`],
    ['no sub', async (t) => `Bearer ${await token(t, shop, { sub: undefined })}`],
    ['no dest', async (t) => `Bearer ${await token(t, shop, { dest: undefined })}`],
    ['no iss', async (t) => `Bearer ${await token(t, shop, { iss: undefined })}`],
    ['iss of another shop than dest', async (t) => `Bearer ${await token(t, shop, { iss: 'https://other.myshopify.com/admin' })}`],
    ['dest with a path', async (t) => `Bearer ${await token(t, shop, { dest: `https://${shop}/x` })}`],
    ['dest over http', async (t) => `Bearer ${await token(t, shop, { dest: `http://${shop}` })}`],
    ['a shop domain that is not a platform domain', async (t) => `Bearer ${await token(t, 'evil.example.com')}`],
    ['an uppercase shop domain', async (t) => `Bearer ${await token(t, shop.toUpperCase())}`],
    ['HS512 instead of HS256', async (t) => `Bearer ${await token(t, shop, {}, TEST_CREDENTIALS.secret, 'HS512')}`],
    ['an unsigned token (alg none)', async (t) => {
      const [, payload] = (await token(t, shop)).split('.');
      return `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
    }],
    ['garbage', async () => 'Bearer not-a-jwt'],
  ];

  it.each(cases)('%s → 401 unauthorized', async (_name, make) => {
    const res = await asAdmin(await make(t));
    const error = expectError(res, 401, 'unauthorized');
    expect(error.message).toMatch(/session token/i);
  });

  it('a token that expires is refused once the clock passes exp', async () => {
    const short = await t.sessionToken(shop, { ttlSeconds: 60 });
    expect((await asAdmin(`Bearer ${short}`)).statusCode).toBe(200);
    t.clock.advance(66_000);
    expectError(await asAdmin(`Bearer ${short}`), 401, 'unauthorized');
  });

  it('an API key is not an admin credential, even a valid one of the same shop', async () => {
    const { key, domain } = await t.shopWithKey();
    expect((await t.inject({ url: '/api/v1/subscription-contracts', headers: bearer(key) })).statusCode).toBe(200);
    for (const url of ['/admin/api/shop', '/admin/api/keys']) {
      expectError(await t.inject({ url, headers: bearer(key) }), 401, 'unauthorized');
    }
    expectError(await t.inject({ method: 'POST', url: '/admin/api/keys', headers: bearer(key), payload: {} }), 401, 'unauthorized');
    const keys = (await t.inject({ url: '/admin/api/keys', headers: await adminAuth(t, domain) })).json();
    expect(keys.activeCount).toBe(1);
  });

  it('a session token is not an API key', async () => {
    const res = await t.inject({ url: '/api/v1/subscription-contracts', headers: { authorization: `Bearer ${await t.sessionToken(shop)}` } });
    expectError(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('a token never provisions a shop it fails for', async () => {
    const domain = uniqueShop('never');
    await asAdmin(`Bearer ${await token(t, domain, { aud: 'another-app' })}`);
    expect(await sql(t, 'SELECT id FROM shops WHERE domain = $1', [domain])).toHaveLength(0);
  });
});

describe('admin API: the secret is sent once and stored nowhere', () => {
  it('only the generation response carries the secret; the database holds only its digest', async () => {
    const domain = uniqueShop('secret');
    await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'enterprise' } });
    const headers = await adminAuth(t, domain);
    const created = await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'ci' } });
    const { secret, key } = created.json();

    // Lists, the shop, a revoke response: never the secret nor any piece of it.
    const later = [
      await t.inject({ url: '/admin/api/keys', headers }),
      await t.inject({ url: '/admin/api/shop', headers }),
      await t.inject({ method: 'POST', url: `/admin/api/keys/${key.id}/revoke`, headers }),
      await t.inject({ url: '/admin/api/keys', headers }),
    ];
    for (const res of later) {
      expect(res.body).not.toContain('svc_live_');
      for (const piece of keyFragments(secret)) expect(res.body).not.toContain(piece);
    }

    const rows = await sql(t, 'SELECT * FROM api_keys WHERE id = $1', [key.id]);
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows[0]);
    expect(stored).not.toContain(secret);
    for (const piece of keyFragments(secret)) expect(stored).not.toContain(piece);
    expect(rows[0].digest).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0].digest).toBe((await import('../src/domain/keys.js')).keyDigest(secret));
    expect(Object.keys(rows[0]).sort()).toEqual(['access', 'created_at', 'digest', 'id', 'last_used_at', 'leaked_at', 'leaked_url', 'name', 'permissions', 'revoked_at', 'revoked_reason', 'shop_id']);

    // Looked up through a unique index on the digest, never compared in code.
    const indexes = await sql<{ indexdef: string }>(t, `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'api_keys'`);
    expect(indexes.some((i) => /CREATE UNIQUE INDEX .* \(digest\)/.test(i.indexdef))).toBe(true);

    // Nowhere else in the database either.
    for (const table of ['shops', 'subscription_contracts', 'contract_events', 'app_settings']) {
      const dump = JSON.stringify(await sql(t, `SELECT * FROM ${table}`));
      for (const piece of keyFragments(secret)) expect(dump).not.toContain(piece);
    }
    const logs = t.logs.join('\n');
    for (const piece of keyFragments(secret)) expect(logs).not.toContain(piece);
  });
});
