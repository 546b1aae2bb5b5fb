import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError, insertContract } from './support/fixtures.js';

/** GET /subscription-contracts takes the bulk jobs' filter as query parameters: one customer's contracts in one request. */

let t: TestApp;
let key: string;
const ids: Record<string, string> = {};
beforeAll(async () => {
  t = await startTestApp();
  let shopId: string;
  ({ key, shopId } = await t.shopWithKey());
  const line = (variantId: string) => ({ title: `Variant ${variantId}`, variantId, quantity: 1, price: { amount: '10.00', currencyCode: 'EUR' } });
  const at = (d: string) => new Date(`${d}T09:00:00.000Z`);
  ids.adaCoffee = (await insertContract(t, shopId, { customerId: '9001', customerEmail: 'Ada@Example.com', lines: [line('51')], nextBillingDate: at('2027-01-05') })).id;
  ids.adaTeaPaused = (await insertContract(t, shopId, { customerId: '9001', customerEmail: 'Ada@Example.com', status: 'PAUSED', pausedAt: t.clock.now(), lines: [line('61'), line('51')], nextBillingDate: at('2027-01-20') })).id;
  ids.bobTea = (await insertContract(t, shopId, { customerId: '9002', customerEmail: 'bob@example.com', lines: [line('61')], nextBillingDate: at('2027-02-01') })).id;
  ids.bobCancelled = (await insertContract(t, shopId, { customerId: '9002', customerEmail: 'bob@example.com', status: 'CANCELLED', cancelledAt: t.clock.now(), lines: [line('51')], nextBillingDate: at('2027-01-10') })).id;
  // Another shop's contract of the same customer id, email and variant is never listed.
  const other = await t.shopWithKey();
  await insertContract(t, other.shopId, { customerId: '9001', customerEmail: 'ada@example.com', lines: [line('51')] });
});
afterAll(() => t.close());

const list = async (query: string): Promise<string[]> => {
  const res = await t.inject({ url: `${API}?${query}`, headers: bearer(key) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().contracts as { id: string }[]).map((c) => c.id).sort();
};
const named = (...names: string[]) => names.map((n) => ids[n]).sort();

describe('list filters', () => {
  it('each filter alone', async () => {
    expect(await list('customerId=9001')).toEqual(named('adaCoffee', 'adaTeaPaused'));
    expect(await list('customerEmail=ada%40example.com')).toEqual(named('adaCoffee', 'adaTeaPaused'));
    expect(await list('customerEmail=ADA%40EXAMPLE.COM')).toEqual(named('adaCoffee', 'adaTeaPaused'));
    expect(await list('variantId=61')).toEqual(named('adaTeaPaused', 'bobTea'));
    expect(await list('status=ACTIVE')).toEqual(named('adaCoffee', 'bobTea'));
    expect(await list('status=PAUSED&status=CANCELLED')).toEqual(named('adaTeaPaused', 'bobCancelled'));
    expect(await list('nextBillingDateFrom=2027-01-10T09:00:00Z')).toEqual(named('adaTeaPaused', 'bobTea', 'bobCancelled'));
    expect(await list('nextBillingDateTo=2027-01-10T09:00:00Z')).toEqual(named('adaCoffee', 'bobCancelled'));
  });

  it('filters AND together, and page like the unfiltered list', async () => {
    expect(await list('customerId=9001&variantId=51&status=ACTIVE')).toEqual(named('adaCoffee'));
    expect(await list('variantId=51&nextBillingDateFrom=2027-01-06T00:00:00Z&nextBillingDateTo=2027-01-31T00:00:00Z')).toEqual(named('adaTeaPaused', 'bobCancelled'));
    expect(await list('customerEmail=nobody%40example.com')).toEqual([]);
    const first = await t.inject({ url: `${API}?variantId=51&limit=1`, headers: bearer(key) });
    const { contracts, nextCursor } = first.json();
    expect(contracts).toHaveLength(1);
    const second = await t.inject({ url: `${API}?variantId=51&limit=5&cursor=${encodeURIComponent(nextCursor)}`, headers: bearer(key) });
    expect([...contracts, ...second.json().contracts].map((c: { id: string }) => c.id).sort()).toEqual(named('adaCoffee', 'adaTeaPaused', 'bobCancelled'));
  });

  it('a malformed filter is 400 invalid_request naming the parameter', async () => {
    for (const q of ['status=SLEEPING', 'nextBillingDateFrom=tomorrow', 'nextBillingDateTo=2027-01-01T00:00:00%2B02:00', 'variantId=abc', 'variantId=99999999999999999999', 'customerId=']) {
      const res = await t.inject({ url: `${API}?${q}`, headers: bearer(key) });
      const err = expectError(res, 400, 'invalid_request');
      expect(err.message, q).toContain(q.split('=')[0]);
    }
  });
});
