import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError } from './support/fixtures.js';

/** Bad reads: ids, other shops' contracts, list parameters (docs/product.md §3, §4). */

let t: TestApp;
let key: string;
let mine: { id: string }[];
let foreign: { id: string }[];
beforeAll(async () => {
  t = await startTestApp();
  const a = await t.shopWithKey();
  key = a.key;
  mine = await t.seed(a.shopId, 3);
  const b = await t.shopWithKey();
  foreign = await t.seed(b.shopId, 1);
});
afterAll(() => t.close());

const get = (url: string) => t.inject({ url, headers: bearer(key) });

describe('contract ids', () => {
  it.each(['abc', '12a', '-1', '1.5', '12345678901234567890', '%20', '1%0A'])('contract_id %j → 400 invalid_request on every route', async (id) => {
    for (const res of [
      await get(`${API}/${id}`),
      await get(`${API}/${id}/events`),
      await t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: 'skip' } }),
    ]) {
      const error = expectError(res, 400, 'invalid_request');
      expect(error.details?.[0]?.path).toBe('contract_id');
    }
  });

  it('19 digits above the int8 maximum are simply not found (404), as are unused ids', async () => {
    for (const id of ['9223372036854775808', '9999999999999999999', '9223372036854775807', '0', '1']) {
      expectError(await get(`${API}/${id}`), 404, 'not_found');
      expectError(await get(`${API}/${id}/events`), 404, 'not_found');
      expectError(await t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: 'skip' } }), 404, 'not_found');
    }
  });

  it("another shop's contract is 404, indistinguishable from a missing one, on read, events and actions", async () => {
    const missingId = String(BigInt(foreign[0].id) + 100000n);
    const pairs = [
      [await get(`${API}/${foreign[0].id}`), await get(`${API}/${missingId}`)],
      [await get(`${API}/${foreign[0].id}/events`), await get(`${API}/${missingId}/events`)],
      [
        await t.inject({ method: 'POST', url: `${API}/${foreign[0].id}/actions`, headers: bearer(key), payload: { action: 'cancel' } }),
        await t.inject({ method: 'POST', url: `${API}/${missingId}/actions`, headers: bearer(key), payload: { action: 'cancel' } }),
      ],
    ];
    for (const [theirs, missing] of pairs) {
      expectError(theirs, 404, 'not_found');
      expectError(missing, 404, 'not_found');
      expect(theirs.json().error.message).toBe(missing.json().error.message);
      expect(theirs.body.length).toBe(missing.body.length);
    }
    // The cancel above did nothing to the other shop's contract.
    const b = await t.inject({ url: `${API}`, headers: bearer(key) });
    expect(b.json().contracts.map((c: { id: string }) => c.id)).toEqual(mine.map((c) => c.id));
  });
});

describe('list parameters', () => {
  it.each(['0', '101', 'x', '', '1.5', '-3', '1e3'])('limit=%j → 400 invalid_request naming limit', async (limit) => {
    const error = expectError(await get(`${API}?limit=${limit}`), 400, 'invalid_request');
    expect(error.details?.[0].path).toBe('limit');
    expectError(await get(`${API}/${mine[0].id}/events?limit=${limit}`), 400, 'invalid_request');
  });

  it('limit 1 and 100 are accepted', async () => {
    expect((await get(`${API}?limit=1`)).json().contracts).toHaveLength(1);
    expect((await get(`${API}?limit=100`)).json().contracts).toHaveLength(3);
  });

  it.each(['nope', 'aWQ6eA', Buffer.from('id:-1').toString('base64url'), Buffer.from('id:99999999999999999999').toString('base64url'), 'x'.repeat(201)])(
    'cursor %j → 400 invalid_request',
    async (cursor) => {
      const error = expectError(await get(`${API}?cursor=${cursor}`), 400, 'invalid_request');
      expect(error.details?.[0].path).toBe('cursor');
      expectError(await get(`${API}/${mine[0].id}/events?cursor=${cursor}`), 400, 'invalid_request');
    },
  );

  it('status must be one of the five', async () => {
    for (const status of ['paused', 'ARCHIVED', '']) {
      const error = expectError(await get(`${API}?status=${status}`), 400, 'invalid_request');
      expect(error.details?.[0].path).toBe('status');
    }
  });

  it('an unknown query parameter is 400 naming it', async () => {
    const error = expectError(await get(`${API}?limit=5&sort=desc`), 400, 'invalid_request');
    expect(JSON.stringify(error.details)).toContain('sort');
    expect(error.message).toContain('sort');
    const events = expectError(await get(`${API}/${mine[0].id}/events?status=ACTIVE`), 400, 'invalid_request');
    expect(JSON.stringify(events.details)).toContain('status');
  });
});
