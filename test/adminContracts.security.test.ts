import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/** A merchant sees and changes only their own shop's contracts, and only with the platform's session token. */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const json = { 'content-type': 'application/json' };

describe('shop isolation', () => {
  it('another shop’s contract is not found, not listed, not searchable, and cannot be changed', async () => {
    const victim = await t.shopWithKey();
    const intruder = await t.shopWithKey();
    const theirs = await insertContract(t, victim.shopId, { customerEmail: 'victim@example.com' });
    await insertContract(t, intruder.shopId, { customerEmail: 'mine@example.com' });
    const headers = await adminAuth(t, intruder.domain);

    const all = (await t.inject({ url: '/admin/api/contracts?limit=100', headers })).json();
    expect(all.contracts.map((c: { customer: { email: string } }) => c.customer.email)).toEqual(['mine@example.com']);
    for (const query of [theirs.id, `#${theirs.id}`, 'victim', 'v']) {
      expect((await t.inject({ url: `/admin/api/contracts?query=${encodeURIComponent(query)}`, headers })).json().contracts, query).toEqual([]);
    }
    // A cursor made from the other shop's ids pages through the intruder's own contracts only.
    const cursor = Buffer.from(`older:${BigInt(theirs.id) + 1n}`).toString('base64url');
    expect((await t.inject({ url: `/admin/api/contracts?cursor=${cursor}`, headers })).json().contracts).toEqual([]);

    const notFound = 'No subscription contract with this id exists for this shop.';
    expect(expectError(await t.inject({ url: `/admin/api/contracts/${theirs.id}`, headers }), 404, 'not_found').message).toBe(notFound);
    expectError(await t.inject({ url: `/admin/api/contracts/${theirs.id}/events`, headers }), 404, 'not_found');
    for (const payload of [{ action: 'cancel', reason: 'gotcha' }, { action: 'pause' }, { action: 'skip' }]) {
      const res = await t.inject({ method: 'POST', url: `/admin/api/contracts/${theirs.id}/actions`, headers: { ...headers, ...json }, payload });
      expect(expectError(res, 404, 'not_found').message).toBe(notFound);
    }
    expect(await contractRow(t, theirs.id)).toMatchObject({ status: 'ACTIVE', version: 0 });
    expect(await eventRows(t, theirs.id)).toEqual([]);
  });
});

describe('who may call', () => {
  it('an API key, no token or an expired session token is 401, and changes nothing', async () => {
    const s = await t.shopWithKey();
    const c = await insertContract(t, s.shopId);
    const expired = await t.sessionToken(s.domain, { ttlSeconds: 60 });
    t.clock.advance(120_000);
    for (const authorization of [`Bearer ${s.key}`, `Bearer ${expired}`, undefined]) {
      const h: Record<string, string> = authorization ? { authorization } : {};
      expectError(await t.inject({ url: '/admin/api/contracts', headers: h }), 401, 'unauthorized');
      expectError(await t.inject({ url: `/admin/api/contracts/${c.id}`, headers: h }), 401, 'unauthorized');
      expectError(await t.inject({ method: 'POST', url: `/admin/api/contracts/${c.id}/actions`, headers: { ...h, ...json }, payload: { action: 'cancel' } }), 401, 'unauthorized');
    }
    expect(await contractRow(t, c.id)).toMatchObject({ status: 'ACTIVE', version: 0 });
    // And the session token is no key for the public API's actions.
    const token = await t.sessionToken(s.domain);
    expectError(await t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${c.id}/actions`, headers: { ...bearer(token), ...json }, payload: { action: 'cancel' } }), 401, 'unauthorized');
    expect(await eventRows(t, c.id)).toEqual([]);
  });
});
