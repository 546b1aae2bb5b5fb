import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../src/services/revokeKey.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError, insertContract, secondInstance, sql } from './support/fixtures.js';

/**
 * A caller is resolved to its principal before anything of its shop leaves (services/principal.ts): on a route whose
 * first read is meant to resolve it, a handler that never reads cannot answer with anything but 401, whether the key
 * is good or revoked; and a route of the API with no policy in domain/operations.ts does not start.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    extraRoutes: (app) => {
      // A route of an operation whose first read resolves the caller, whose handler never reads: it must not answer.
      app.get('/api/v1/test/unread', { schema: { operationId: 'getSubscriptionContract', hide: true } }, async () => ({ secret: 'shop data' }));
    },
  });
});
afterAll(() => t.close());

/** A shop with a key the instance has cached (one GET of a contract), and one of its contracts. */
async function cachedKey(app: TestApp = t) {
  const shop = await t.shopWithKey();
  const c = await insertContract(t, shop.shopId);
  expect((await app.inject({ url: `${API}/${c.id}`, headers: bearer(shop.key) })).statusCode).toBe(200);
  return { ...shop, contractId: c.id };
}

describe('a route that skips the resolving read', () => {
  it('never reads: 401 for a good key and for a revoked one, and nothing of the shop leaves', async () => {
    const shop = await cachedKey();
    const res = await t.inject({ url: '/api/v1/test/unread', headers: bearer(shop.key) });
    expect(expectError(res, 401, 'unauthorized').message).toBe('The API key could not be confirmed for this request.');
    expect(res.body).not.toContain('shop data');
    expect(res.headers['www-authenticate']).toBe('Bearer');
    const [row] = await sql<{ id: string }>(t, 'SELECT id::text FROM api_keys WHERE shop_id = $1', [shop.shopId]);
    await revokeKey({ ctx: t.ctx, input: { shopId: shop.shopId, keyId: row.id } });
    const revoked = await t.inject({ url: '/api/v1/test/unread', headers: bearer(shop.key) });
    expectError(revoked, 401, 'unauthorized');
    expect(revoked.body).not.toContain('shop data');
  });

  it('a route of the API with no policy for its operation refuses to start', async () => {
    await expect(
      startTestApp({ database: t.database, extraRoutes: (app) => app.get('/api/v1/test/unlisted', { schema: { operationId: 'nothingKnown', hide: true } }, async () => ({})) }),
    ).rejects.toThrow(/no policy for operation "nothingKnown"/);
  });
});

describe('revocation holds on the very next request, on any instance', () => {
  it('a key revoked through one instance is refused by another that has it cached, on every route that confirms by reading', async () => {
    const other = await secondInstance(t);
    try {
      const shop = await cachedKey(other);
      const [row] = await sql<{ id: string }>(t, 'SELECT id::text FROM api_keys WHERE shop_id = $1', [shop.shopId]);
      await revokeKey({ ctx: t.ctx, input: { shopId: shop.shopId, keyId: row.id } });
      const json = { 'content-type': 'application/json' };
      for (const req of [
        { url: `${API}/${shop.contractId}` },
        { method: 'POST' as const, url: `${API}/${shop.contractId}/actions`, headers: json, payload: { action: 'pause' } },
        { method: 'POST' as const, url: `${API}/${shop.contractId}/edits`, headers: json, payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }] } },
      ]) {
        const res = await other.inject({ ...req, headers: { ...(req.headers ?? {}), ...bearer(shop.key) } });
        expectError(res, 401, 'unauthorized');
      }
      const [c] = await sql<{ status: string; version: number }>(t, 'SELECT status, version FROM subscription_contracts WHERE id = $1', [shop.contractId]);
      expect(c).toEqual({ status: 'ACTIVE', version: 0 });
    } finally {
      await other.close();
    }
  });
});
