import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDiscountCode, seedProducts } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, insertContract, sql } from './support/fixtures.js';

/** Contract edits in standalone mode: lines, frequency, address, discounts, with a preview. */

const NOW = new Date('2026-11-22T10:00:00.000Z');
let t: TestApp;
let key: string;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
  await seedProducts(t.ctx, shopId);
  await createDiscountCode(t.ctx, { shopId, code: 'WELCOME10', percentage: 10 });
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t.close());

const edit = (id: string, body: object, headers: Record<string, string> = {}) =>
  t.inject({ method: 'POST', url: `${API}/${id}/edits`, headers: { ...bearer(key), ...headers }, payload: body });
const read = async (id: string) => (await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json().contract;

async function ok(id: string, body: object) {
  const res = await edit(id, body);
  expect(res.statusCode, res.body).toBe(200);
  expect(Object.keys(res.json()).sort()).toEqual(['contract', 'preview']);
  return res.json() as { contract: any; preview: boolean };
}

describe('POST /subscription-contracts/{id}/edits', () => {
  it('set_quantity: the line changes, the totals follow, one contract.updated with before and after', async () => {
    const c = await insertContract(t, shopId);
    const lineId = c.lines[0].id;
    const { contract, preview } = await ok(c.id, { operations: [{ op: 'set_quantity', lineId, quantity: 3 }] });
    expect(preview).toBe(false);
    expect(contract.lines).toEqual([{ ...c.lines[0], quantity: 3 }]);
    expect(contract.totals).toEqual({ subtotal: '72.00', discounts: '0.00', shipping: '0.00', total: '72.00', currencyCode: 'EUR' });
    expect(contract.updatedAt).toBe(NOW.toISOString());
    expect(await read(c.id)).toEqual(contract);
    const events = await eventRows(t, c.id);
    expect(events.map((e) => [e.type, e.actorType, e.fromStatus, e.toStatus])).toEqual([['contract.updated', 'api_key', 'ACTIVE', 'ACTIVE']]);
    expect(events[0].data).toEqual({ changes: [{ op: 'set_quantity', lineId, before: { quantity: 2 }, after: { quantity: 3 } }] });
  });

  it('set_price: the line\'s unit price changes, the totals follow, the event says before and after', async () => {
    const c = await insertContract(t, shopId);
    const lineId = c.lines[0].id;
    const { contract } = await ok(c.id, { operations: [{ op: 'set_price', lineId, price: '26.5' }] });
    expect(contract.lines).toEqual([{ ...c.lines[0], price: { amount: '26.50', currencyCode: 'EUR' } }]);
    expect(contract.totals).toEqual({ subtotal: '53.00', discounts: '0.00', shipping: '0.00', total: '53.00', currencyCode: 'EUR' });
    const [event] = await eventRows(t, c.id);
    expect(event.data.changes).toEqual([{ op: 'set_price', lineId, before: { price: { amount: '24.00', currencyCode: 'EUR' } }, after: { price: { amount: '26.50', currencyCode: 'EUR' } } }]);
    expect((await contractRow(t, c.id)).lines[0].price).toEqual({ amount: '26.50', currencyCode: 'EUR' });
    // A price with more decimals than the currency has, or of another form, is refused and changes nothing.
    for (const price of ['26.505', '-1.00', '26,50']) {
      const res = await edit(c.id, { operations: [{ op: 'set_price', lineId, price }] });
      expect(res.statusCode, price).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, price).toBeLessThan(500);
    }
    expect((await contractRow(t, c.id)).lines[0].price).toEqual({ amount: '26.50', currencyCode: 'EUR' });
  });

  it('several operations apply in order, all together: swap, add from the catalog, remove, frequency, address, a code', async () => {
    const c = await insertContract(t, shopId, {
      lines: [
        { title: 'Coffee 1kg', variantId: '40001', quantity: 1, price: { amount: '24.00', currencyCode: 'EUR' } },
        { title: 'Green tea 250g', variantId: '40003', quantity: 2, price: { amount: '11.90', currencyCode: 'EUR' } },
      ],
    });
    const [coffee, tea] = c.lines;
    const address = { firstName: 'Ada', lastName: 'Lovelace', address1: '12 St James Square', city: 'London', zip: 'SW1Y 4JH', countryCode: 'GB' };
    const { contract } = await ok(c.id, {
      operations: [
        { op: 'swap_variant', lineId: coffee.id, variantId: '40002' },
        { op: 'add_line', variantId: '40004', quantity: 2 },
        { op: 'add_line', variantId: '40005', quantity: 1, price: '50' },
        { op: 'remove_line', lineId: tea.id },
        { op: 'set_frequency', interval: 'WEEK', intervalCount: 2, nextBillingDate: '2026-12-10T08:00:00Z' },
        { op: 'set_shipping_address', address },
        { op: 'apply_discount_code', code: 'welcome10' },
      ],
    });
    expect(contract.lines.map((l: any) => [l.title, l.variantId, l.quantity, l.price.amount])).toEqual([
      ['Espresso beans 500g', '40002', 1, '14.50'],
      ['Oat milk 6-pack', '40004', 2, '9.80'],
      ['Dog food 12kg', '40005', 1, '50.00'],
    ]);
    expect(contract.lines[0].id).toBe(coffee.id);
    expect(new Set(contract.lines.map((l: any) => l.id)).size).toBe(3);
    expect(contract.billingPolicy).toEqual({ interval: 'WEEK', intervalCount: 2 });
    expect(contract.deliveryPolicy).toEqual({ interval: 'WEEK', intervalCount: 2 });
    expect(contract.nextBillingDate).toBe('2026-12-10T08:00:00.000Z');
    expect(contract.shippingAddress).toEqual(address);
    expect(contract.discounts).toEqual([{ id: expect.any(String), title: 'WELCOME10', code: 'WELCOME10', value: { type: 'percentage', percentage: 10 } }]);
    // 14.50 + 2 × 9.80 + 50.00 = 84.10; 10 % off is 8.41.
    expect(contract.totals).toEqual({ subtotal: '84.10', discounts: '8.41', shipping: '0.00', total: '75.69', currencyCode: 'EUR' });
    const [event] = await eventRows(t, c.id);
    expect((event.data as any).changes.map((x: any) => x.op)).toEqual(['swap_variant', 'add_line', 'add_line', 'remove_line', 'set_frequency', 'set_shipping_address', 'apply_discount_code']);
    // The address is personal data: the event says it changed, not what it is.
    expect(JSON.stringify(event.data)).not.toContain('Lovelace');
  });

  it('remove_discount takes a discount off; the totals follow', async () => {
    const c = await insertContract(t, shopId, { discounts: [{ id: 'd1', title: 'Loyalty', code: null, value: { type: 'fixed_amount', amount: { amount: '5.00', currencyCode: 'EUR' } } }] });
    expect((await read(c.id)).totals.total).toBe('43.00');
    const { contract } = await ok(c.id, { operations: [{ op: 'remove_discount', discountId: 'd1' }] });
    expect(contract.discounts).toEqual([]);
    expect(contract.totals.total).toBe('48.00');
  });

  it('a preview answers the contract exactly as it would be, and changes nothing: no row, no event, no webhook', async () => {
    const c = await insertContract(t, shopId);
    const before = await read(c.id);
    const outbox = async () => (await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM webhook_deliveries WHERE contract_id = $1', [c.id]))[0].n;
    const { contract, preview } = await ok(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 5 }, { op: 'apply_discount_code', code: 'WELCOME10' }], preview: true });
    expect(preview).toBe(true);
    expect(contract.lines[0].quantity).toBe(5);
    expect(contract.totals).toEqual({ subtotal: '120.00', discounts: '12.00', shipping: '0.00', total: '108.00', currencyCode: 'EUR' });
    expect(await read(c.id)).toEqual(before);
    expect((await contractRow(t, c.id)).version).toBe(c.version);
    expect(await eventRows(t, c.id)).toEqual([]);
    expect(await outbox()).toBe(0);
    // Committing the same edit gives what the preview showed (but for the time of the change).
    const committed = await ok(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 5 }, { op: 'apply_discount_code', code: 'WELCOME10' }] });
    expect({ ...committed.contract, discounts: [], updatedAt: null }).toEqual({ ...contract, discounts: [], updatedAt: null });
  });

  it('a paused contract can be edited; the edit keeps it paused', async () => {
    const c = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW });
    const { contract } = await ok(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 1 }] });
    expect(contract).toMatchObject({ status: 'PAUSED', pausedAt: NOW.toISOString() });
  });

  it('an Idempotency-Key replays the edit: applied once, the same answer', async () => {
    const c = await insertContract(t, shopId);
    const body = { operations: [{ op: 'add_line', variantId: '40006', quantity: 1 }] };
    const first = await edit(c.id, body, { 'idempotency-key': 'edit-once' });
    const again = await edit(c.id, body, { 'idempotency-key': 'edit-once' });
    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect((await read(c.id)).lines).toHaveLength(2);
    expect(await eventRows(t, c.id)).toHaveLength(1);
    // A preview with a key is kept too: its replay is the same preview.
    const p1 = await edit(c.id, { ...body, preview: true }, { 'idempotency-key': 'preview-once' });
    const p2 = await edit(c.id, { ...body, preview: true }, { 'idempotency-key': 'preview-once' });
    expect(p2.headers['idempotent-replayed']).toBe('true');
    expect(p2.json()).toEqual(p1.json());
  });

  it('an edit is delivered by webhooks as contract.updated, with the contract after it', async () => {
    const c = await insertContract(t, shopId);
    await sql(t, `INSERT INTO webhook_endpoints (shop_id, url, events, status, secret, created_at, updated_at) VALUES ($1, 'https://hooks.example.com/x', '{contract.updated}', 'enabled', 'whsec_x', now(), now())`, [shopId]);
    await ok(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 4 }] });
    const [delivery] = await sql<{ type: string; contract: any }>(t, 'SELECT type, contract FROM webhook_deliveries WHERE contract_id = $1', [c.id]);
    expect(delivery.type).toBe('contract.updated');
    expect(delivery.contract.lines[0].quantity).toBe(4);
    expect(delivery.contract.totals.total).toBe('96.00');
    await sql(t, 'DELETE FROM webhook_deliveries WHERE shop_id = $1', [shopId]);
    await sql(t, 'DELETE FROM webhook_endpoints WHERE shop_id = $1', [shopId]);
  });
});
