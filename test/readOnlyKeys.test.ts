import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, eventRows, expectError, secondInstance } from './support/fixtures.js';

/**
 * Read-only keys (docs/product.md §1 access, §2 order of checks, §4 insufficient_scope): chosen at generation, fixed for the
 * key's life, listed with the key; they read contracts and events, and every change answers 403
 * insufficient_scope, checked after the plan and before the rate limit, whether or not the instance has the key
 * cached.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ appDeps: { rateLimit: { perMinute: 3, authFailuresPerMinute: 100, store: new MemoryRateLimitStore({ now: () => new Date('2026-11-22T10:00:00.000Z') }) } } });
});
afterAll(() => t.close());

const json = { 'content-type': 'application/json' };
const act = (key: string, id: string, payload: object, headers: object = {}) =>
  t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...json, ...bearer(key), ...headers }, payload });

describe('generated read-only on the admin API', () => {
  it('is chosen at generation, listed with its access, and read-write is the default', async () => {
    const s = await t.shopWithKey();
    const headers = await adminAuth(t, s.domain);
    const made = await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'reporting', access: 'read_only' } });
    expect(made.statusCode).toBe(201);
    expect(made.json().key.access).toBe('read_only');
    const plain = await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'backend' } });
    expect(plain.json().key.access).toBe('read_write');
    const listed = (await t.inject({ url: '/admin/api/keys', headers })).json().keys as { name: string; access: string }[];
    expect(Object.fromEntries(listed.map((k) => [k.name, k.access]))).toEqual({ test: 'read_write', reporting: 'read_only', backend: 'read_write' });
  });

  it('an unknown access is 400 invalid_request naming the field', async () => {
    const s = await t.shopWithKey();
    const res = await t.inject({ method: 'POST', url: '/admin/api/keys', headers: await adminAuth(t, s.domain), payload: { access: 'admin' } });
    expect(expectError(res, 400, 'invalid_request').details?.[0].path).toBe('access');
  });
});

describe('a read-only key on the API', () => {
  it('reads contracts, lists and events', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
    expect((await t.inject({ url: API, headers: bearer(s.key) })).statusCode).toBe(200);
    expect((await t.inject({ url: `${API}/${c.id}/events`, headers: bearer(s.key) })).statusCode).toBe(200);
  });

  it.each([
    ['first use on this instance', false],
    ['key already cached by this instance', true],
  ])('every action is 403 insufficient_scope and changes nothing (%s)', async (_name, warm) => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    if (warm) expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
    const before = await contractRow(t, c.id);
    for (const body of [{ action: 'pause' }, { action: 'cancel' }, { action: 'skip' }]) {
      const res = await act(s.key, c.id, body);
      expect(expectError(res, 403, 'insufficient_scope').message).toMatch(/read-only/);
    }
    // With an Idempotency-Key too; and nothing is kept for it.
    expectError(await act(s.key, c.id, { action: 'pause' }, { 'idempotency-key': 'ro-1' }), 403, 'insufficient_scope');
    expect(await contractRow(t, c.id)).toEqual(before);
    expect(await eventRows(t, c.id)).toEqual([]);
  });

  it('comes after the plan (403 plan_required first) and before the rate limit (refusals cost the shop nothing)', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
    expectError(await act(s.key, c.id, { action: 'pause' }), 403, 'plan_required');
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    for (let i = 0; i < 5; i++) expectError(await act(s.key, c.id, { action: 'pause' }), 403, 'insufficient_scope');
    // The shop's budget (3 a minute) is untouched by the five refusals.
    const read = await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
    expect(read.statusCode).toBe(200);
    expect(read.headers['ratelimit-remaining']).toBe('2');
  });

  it('a bad body from a read-only key is still insufficient_scope (scope before validation)', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    expectError(await act(s.key, c.id, { action: 'explode' }), 403, 'insufficient_scope');
  });

  it('is read-only on every instance', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    const other = await secondInstance(t);
    try {
      expectError(
        await other.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'skip' } }),
        403,
        'insufficient_scope',
      );
    } finally {
      await other.close();
    }
  });
});
