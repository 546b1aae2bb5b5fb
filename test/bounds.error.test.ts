import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProducts } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, expectError, insertContract } from './support/fixtures.js';

/**
 * What a client sends stays within the formats svc documents, or is refused with a message that says why: never a
 * value changed on the way in (a price rounded), nor one svc cannot write back (an amount of 18 digits, a year past
 * 9999). And each route's 413 names its own limit.
 */

let t: TestApp;
let key: string;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
  await seedProducts(t.ctx, shopId);
});
afterAll(() => t.close());

const edit = (id: string, operations: object[], preview = false) =>
  t.inject({ method: 'POST', url: `${API}/${id}/edits`, headers: bearer(key), payload: { operations, ...(preview && { preview }) } });

describe('a price has the decimals of the contract\'s currency', () => {
  it.each([
    ['EUR', '9999999999999.9999', 2],
    ['EUR', '24.999', 2],
    ['JPY', '100.5', 0],
    ['KWD', '1.2345', 3],
  ])('%s %s: 422 invalid_edit, not rounded', async (currencyCode, price, decimals) => {
    const c = await insertContract(t, shopId, { lines: [{ title: 'Tea', variantId: '51', quantity: 1, price: { amount: currencyCode === 'JPY' ? '2400' : '24.00', currencyCode } }] });
    for (const op of [{ op: 'add_line', variantId: '40001', quantity: 1, price }, { op: 'swap_variant', lineId: c.lines[0].id, variantId: '40001', price }]) {
      const error = expectError(await edit(c.id, [op]), 422, 'invalid_edit');
      expect(error.details).toEqual([{ path: 'operations.0', message: `the price "${price}" has more decimals than ${currencyCode} has (${decimals})` }]);
    }
    expect((await contractRow(t, c.id)).version).toBe(c.version);
  });

  it('decimals that are zeros change nothing: taken, written with the currency\'s decimals', async () => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, [{ op: 'add_line', variantId: '40001', quantity: 1, price: '19.9000' }], true);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().contract.lines[1].price).toEqual({ amount: '19.90', currencyCode: 'EUR' });
  });
});

describe('an order\'s amounts stay within 13 integer digits', () => {
  it('an edit that would take the subtotal past 9999999999999.99 is refused, naming the amount; up to it is fine', async () => {
    // The example contract: 2 × 24.00 EUR.
    const c = await insertContract(t, shopId);
    const over = await edit(c.id, [{ op: 'add_line', variantId: '40001', quantity: 1, price: '9999999999952.00' }]);
    expect(expectError(over, 422, 'invalid_edit').details).toEqual([
      { path: 'operations.0', message: 'the contract\'s subtotal would be 10000000000000.00 EUR, more than the largest amount an order can have (9999999999999.99 EUR)' },
    ]);
    const many = await edit(c.id, [{ op: 'add_line', variantId: '40001', quantity: 999, price: '9999999999999.99' }]);
    expect(expectError(many, 422, 'invalid_edit').details?.[0].message).toMatch(/^the contract's subtotal would be \d{16}\.\d\d EUR, more than/);
    const quantity = await edit(c.id, [{ op: 'swap_variant', lineId: c.lines[0].id, variantId: '40001', price: '99999999999.99' }, { op: 'set_quantity', lineId: c.lines[0].id, quantity: 999 }]);
    expect(expectError(quantity, 422, 'invalid_edit').details?.[0].path).toBe('operations.1');
    expect((await contractRow(t, c.id)).version).toBe(c.version);

    const atMost = await edit(c.id, [{ op: 'add_line', variantId: '40001', quantity: 1, price: '9999999999951.99' }]);
    expect(atMost.statusCode, atMost.body).toBe(200);
    expect(atMost.json().contract.totals).toMatchObject({ subtotal: '9999999999999.99', total: '9999999999999.99' });
  });
});

describe('a frequency is a period of at most 5 years', () => {
  it.each([
    ['DAY', 1826],
    ['WEEK', 261],
    ['MONTH', 61],
    ['YEAR', 6],
    ['YEAR', 365],
  ])('%s × %i: 400 invalid_request naming intervalCount', async (interval, intervalCount) => {
    const c = await insertContract(t, shopId);
    const error = expectError(await edit(c.id, [{ op: 'set_frequency', interval, intervalCount }]), 400, 'invalid_request');
    expect(error.details).toEqual([{ path: 'operations.0.intervalCount', message: expect.stringContaining('a period of at most 5 years') }]);
  });

  it.each([
    ['DAY', 1825],
    ['WEEK', 260],
    ['MONTH', 60],
    ['YEAR', 5],
  ])('%s × %i is fine', async (interval, intervalCount) => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, [{ op: 'set_frequency', interval, intervalCount }], true);
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('upcoming renewals never go past year 9999', () => {
  it('a contract made before the bound, every 365 years: the renewals up to 9999 only, each a four-digit year', async () => {
    const c = await insertContract(t, shopId, { billingInterval: 'YEAR', billingIntervalCount: 365, nextBillingDate: new Date('2391-12-01T00:00:00.000Z') });
    const res = await t.inject({ url: `${API}/${c.id}/upcoming?count=24`, headers: bearer(key) });
    expect(res.statusCode, res.body).toBe(200);
    const dates = res.json().upcoming.map((u: { date: string }) => u.date);
    expect(dates).toEqual(['2391-12-01T00:00:00.000Z', ...Array.from({ length: 20 }, (_, i) => `${2391 + 365 * (i + 1)}-12-01T00:00:00.000Z`)].filter((d) => d < '9999-12-31T23:59:59.999Z'));
    for (const d of dates) expect(d).toMatch(/^\d{4}-/);
  });
});

describe('413 names the limit of the route it came to', () => {
  it('16 KiB on the API, 1 MiB on the secret scanning reports', async () => {
    const c = await insertContract(t, shopId);
    const api = expectError(
      await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...bearer(key), 'content-type': 'application/json' }, payload: JSON.stringify({ action: 'cancel', reason: 'x'.repeat(17 * 1024) }) }),
      413,
      'payload_too_large',
    );
    expect(api.message).toBe('The request body is larger than 16 KiB, the most this endpoint takes.');
    const report = expectError(
      await t.inject({ method: 'POST', url: '/secret-scanning/github', headers: { 'content-type': 'application/json', 'github-public-key-identifier': 'k1', 'github-public-key-signature': 'MEUCIQ==' }, payload: JSON.stringify([{ token: 'x'.repeat(1024 * 1024) }]) }),
      413,
      'payload_too_large',
    );
    expect(report.message).toBe('The request body is larger than 1 MiB, the most this endpoint takes.');
  });
});
