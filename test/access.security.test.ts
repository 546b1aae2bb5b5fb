import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { newRawKey } from '../src/domain/keys.js';
import { authenticateApiKey } from '../src/services/authenticateApiKey.js';
import { createServiceContext, type ServiceContext } from '../src/services/context.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { adminAuth, API, expectError, secondInstance, sql } from './support/fixtures.js';

/** Who gets through /api/v1 (docs/product.md §1, §2, §5), in the order of checks docs/product.md §2 fixes. */

/**
 * The test database with its I/O (queries, sessions, pings) trapped: every use is counted and fails. Proof that a
 * code path does no database work; other properties (its kind, pool statistics) stay readable.
 */
function untouchableDatabase(real: Database): { db: Database; touches: () => number } {
  let touches = 0;
  const io = new Set<PropertyKey>(['orm', 'withSession', 'ping', 'prepared']);
  const trap = new Proxy(real, {
    get(target, prop, receiver) {
      if (!io.has(prop)) return Reflect.get(target, prop, receiver);
      touches++;
      throw new Error(`database touched (${String(prop)})`);
    },
  });
  return { db: trap, touches: () => touches };
}

/** A copy of a well-formed key with one character of its checksum changed. */
const badChecksum = (key: string) => key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('key syntax and checksum: refused without touching the database', () => {
  it('authenticateApiKey rejects a bad checksum with 401 and no database access', async () => {
    const { db, touches } = untouchableDatabase(t.database.db);
    const ctx: ServiceContext = createServiceContext({ db, clock: new TestClock(), freeUntil: null });
    const { key } = await t.shopWithKey();
    for (const raw of [badChecksum(key), key.slice(0, -1), 'svc_live_short', key.replace('svc_live_', 'svc_test_')]) {
      await expect(authenticateApiKey({ ctx, input: { authorization: `Bearer ${raw}` } })).rejects.toMatchObject({ code: 'unauthorized' });
    }
    expect(touches()).toBe(0);
    // The trap is real: a well-formed key does reach the database.
    await expect(authenticateApiKey({ ctx, input: { authorization: `Bearer ${key}` } })).rejects.toThrow(/database touched/);
    expect(touches()).toBeGreaterThan(0);
  });

  it('over HTTP, an app whose database fails on any touch still answers a bad checksum with 401', async () => {
    const { db, touches } = untouchableDatabase(t.database.db);
    const app = await startTestApp({ database: { ...t.database, db }, clock: t.clock });
    try {
      const res = await app.inject({ url: `${API}/1`, headers: bearer(badChecksum(newRawKey())) });
      expectError(res, 401, 'unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(touches()).toBe(0);
    } finally {
      await app.close();
    }
  });
});

describe('lookup: unknown or revoked keys are 401, indistinguishable', () => {
  it('an unknown well-formed key is 401 unauthorized with WWW-Authenticate: Bearer', async () => {
    const res = await t.inject({ url: API, headers: bearer(newRawKey()) });
    const error = expectError(res, 401, 'unauthorized');
    expect(error.message).toMatch(/invalid or (has been )?revoked/i);
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('a revoked key fails on the very next request, on every instance, with the same answer as an unknown one', async () => {
    const { key, domain } = await t.shopWithKey();
    const other = await secondInstance(t);
    try {
      expect((await t.inject({ url: API, headers: bearer(key) })).statusCode).toBe(200);
      expect((await other.inject({ url: API, headers: bearer(key) })).statusCode).toBe(200);
      const headers = await adminAuth(t, domain);
      const [{ id }] = (await t.inject({ url: '/admin/api/keys', headers })).json().keys;
      expect((await t.inject({ method: 'POST', url: `/admin/api/keys/${id}/revoke`, headers })).statusCode).toBe(200);

      const here = await t.inject({ url: API, headers: bearer(key) });
      const there = await other.inject({ url: API, headers: bearer(key) });
      const unknown = await t.inject({ url: API, headers: bearer(newRawKey()) });
      for (const res of [here, there]) {
        expectError(res, 401, 'unauthorized');
        expect(res.json().error.message).toBe(unknown.json().error.message);
        expect(res.headers['www-authenticate']).toBe('Bearer');
      }
    } finally {
      await other.close();
    }
  });
});

describe('the Authorization header', () => {
  const cases: [string, Record<string, string>][] = [
    ['missing', {}],
    ['empty', { authorization: '' }],
    ['Basic scheme', { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` }],
    ['Token scheme', { authorization: `Token ${newRawKey()}` }],
    ['Bearer without a token', { authorization: 'Bearer' }],
    ['Bearer with two tokens', { authorization: `Bearer ${newRawKey()} ${newRawKey()}` }],
    ['a bare key without scheme', { authorization: newRawKey() }],
  ];
  it.each(cases)('%s → 401 unauthorized with WWW-Authenticate: Bearer', async (_name, headers) => {
    const res = await t.inject({ url: API, headers });
    expectError(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('a missing key is told how to send one', async () => {
    const res = await t.inject({ url: API });
    expect(res.json().error.message).toMatch(/Authorization: Bearer/);
  });

  it('Bearer with two tokens fails even when the first is a valid key', async () => {
    const { key } = await t.shopWithKey();
    expectError(await t.inject({ url: API, headers: { authorization: `Bearer ${key} ${key}` } }), 401, 'unauthorized');
    expect((await t.inject({ url: API, headers: bearer(key) })).statusCode).toBe(200);
  });
});

describe('order of checks: syntax → lookup → plan → the operation', () => {
  it('a revoked key of a shop without access is 401, not 403 (lookup before plan)', async () => {
    const { key, domain, shopId } = await t.shopWithKey();
    await sql(t, 'UPDATE api_keys SET revoked_at = now() WHERE shop_id = $1', [shopId]);
    await setShopPlan({ ctx: t.ctx, input: { domain, plan: 'basic' } });
    expectError(await t.inject({ url: API, headers: bearer(key) }), 401, 'unauthorized');
  });

  it('authentication comes before input validation: no key + bad input is 401, no access + bad input is 403', async () => {
    const { key } = await t.shopWithKey('basic');
    expectError(await t.inject({ url: `${API}/abc` }), 401, 'unauthorized');
    expectError(await t.inject({ url: `${API}?limit=0` }), 401, 'unauthorized');
    expectError(await t.inject({ method: 'POST', url: `${API}/1/actions`, headers: { 'content-type': 'text/plain' }, payload: 'x' }), 401, 'unauthorized');
    expectError(await t.inject({ method: 'POST', url: `${API}/1/actions`, payload: { action: 'explode' } }), 401, 'unauthorized');
    expectError(await t.inject({ url: `${API}/abc`, headers: bearer(key) }), 403, 'plan_required');
    expectError(await t.inject({ method: 'POST', url: `${API}/1/actions`, headers: bearer(key), payload: { action: 'explode' } }), 403, 'plan_required');
  });

  it('with access, a contract of the key\'s shop is the operation; 404 only comes after authentication', async () => {
    const { key } = await t.shopWithKey();
    expectError(await t.inject({ url: `${API}/999999999` }), 401, 'unauthorized');
    expectError(await t.inject({ url: `${API}/999999999`, headers: bearer(key) }), 404, 'not_found');
  });
});
