import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_TYPES } from '../src/domain/webhooks.js';
import { createDiscountCode, SEED_PRODUCTS } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/**
 * The admin's contract edit (session token): the API's edit with the same body, rules and service, previewed first
 * (nothing changes), then saved as the merchant (actor admin); the catalog the edit form offers; and the webhook event
 * types Settings → Webhooks lists.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const json = { 'content-type': 'application/json' };

async function merchant() {
  const s = await t.shopWithKey();
  const headers = { ...(await adminAuth(t, s.domain)), ...json };
  const edit = (id: string, payload: object) => t.inject({ method: 'POST', url: `/admin/api/contracts/${id}/edits`, headers, payload });
  return { ...s, headers, edit };
}

const coffee = { title: 'Coffee 1kg', variantId: '40001', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } };
const beans = { title: 'Espresso beans 500g', variantId: '40002', quantity: 1, price: { amount: '14.50', currencyCode: 'EUR' } };

describe('POST /admin/api/contracts/{id}/edits', () => {
  it('previews (nothing changes, the same answer as the API\'s preview), then saves as the merchant with what changed in the event', async () => {
    const m = await merchant();
    await t.seed(m.shopId, 1); // the shop's catalog
    await createDiscountCode(t.ctx, { shopId: m.shopId, code: 'WELCOME10', percentage: 10 });
    const c = await insertContract(t, m.shopId, { lines: [coffee, beans] });
    const before = await contractRow(t, c.id);
    const coffeeLine = before.lines[0].id;
    const operations = [
      { op: 'set_quantity', lineId: coffeeLine, quantity: 3 },
      { op: 'apply_discount_code', code: 'WELCOME10' },
    ];

    const preview = await m.edit(c.id, { operations, preview: true });
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json().preview).toBe(true);
    expect(preview.json().contract.totals).toMatchObject({ subtotal: '86.50', discounts: '8.65', total: '77.85', currencyCode: 'EUR' });
    expect(preview.json().contract.lines[0]).toMatchObject({ id: coffeeLine, quantity: 3 });
    // Nothing changed: the row and its history are as they were.
    expect(await contractRow(t, c.id)).toEqual(before);
    expect(await eventRows(t, c.id)).toEqual([]);
    // The API's preview of the same body answers the same contract (one service).
    const api = await t.inject({ method: 'POST', url: `${API}/${c.id}/edits`, headers: { ...bearer(m.key), ...json }, payload: { operations, preview: true } });
    expect(api.statusCode, api.body).toBe(200);
    const { discounts: apiDiscounts, ...apiContract } = api.json().contract;
    const { discounts: adminDiscounts, ...adminContract } = preview.json().contract;
    expect(adminContract).toEqual(apiContract);
    expect(adminDiscounts.map((d: { code: string }) => d.code)).toEqual(apiDiscounts.map((d: { code: string }) => d.code));

    const saved = await m.edit(c.id, { operations });
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.json()).toMatchObject({ preview: false, contract: { totals: { total: '77.85' } } });
    const row = await contractRow(t, c.id);
    expect(row.lines.map((l) => l.quantity)).toEqual([3, 1]);
    expect(row.discounts.map((d) => d.code)).toEqual(['WELCOME10']);
    const [event] = await eventRows(t, c.id);
    expect(event).toMatchObject({ type: 'contract.updated', actorType: 'admin' });
    expect((event.data as { changes: unknown[] }).changes).toEqual([
      { op: 'set_quantity', lineId: coffeeLine, before: { quantity: 2 }, after: { quantity: 3 } },
      expect.objectContaining({ op: 'apply_discount_code', before: null, after: expect.objectContaining({ code: 'WELCOME10' }) }),
    ]);
  });

  it('refuses as the API does: an operation that cannot apply (422 naming it), a malformed one (400), an ended contract (409), another shop\'s (404)', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId, { lines: [coffee] });
    const [line] = (await contractRow(t, c.id)).lines;

    const last = await m.edit(c.id, { operations: [{ op: 'remove_line', lineId: line.id }] });
    const e = expectError(last, 422, 'invalid_edit');
    expect(e.details).toEqual([{ path: 'operations.0', message: expect.stringMatching(/last line/) }]);
    const unknownOp = expectError(await m.edit(c.id, { operations: [{ op: 'set_colour', colour: 'red' }] }), 400, 'invalid_request');
    expect(unknownOp.details?.[0].path).toBe('operations.0.op');
    expectError(await m.edit(c.id, { operations: [{ op: 'set_quantity', lineId: line.id, quantity: 0 }] }), 400, 'invalid_request');
    expectError(await m.edit(c.id, { operations: [], preview: true }), 400, 'invalid_request');

    const cancelled = await insertContract(t, m.shopId, { status: 'CANCELLED' });
    const [cancelledLine] = (await contractRow(t, cancelled.id)).lines;
    expectError(await m.edit(cancelled.id, { operations: [{ op: 'set_quantity', lineId: cancelledLine.id, quantity: 2 }] }), 409, 'invalid_state');

    const other = await merchant();
    expectError(await other.edit(c.id, { operations: [{ op: 'set_quantity', lineId: line.id, quantity: 2 }] }), 404, 'not_found');
    // The API key is for the API: the admin route takes only a session token.
    const withKey = await t.inject({ method: 'POST', url: `/admin/api/contracts/${c.id}/edits`, headers: { ...bearer(m.key), ...json }, payload: { operations: [{ op: 'set_quantity', lineId: line.id, quantity: 2 }] } });
    expectError(withKey, 401, 'unauthorized');
    expect((await contractRow(t, c.id)).lines[0].quantity).toBe(2);
    expect(await eventRows(t, c.id)).toEqual([]);
  });
});

describe('GET /admin/api/catalog/variants', () => {
  it('lists the shop\'s variants by title (what the edit form offers), none of another shop\'s', async () => {
    const m = await merchant();
    expect((await t.inject({ url: '/admin/api/catalog/variants', headers: m.headers })).json()).toEqual({ variants: [] });
    await t.seed(m.shopId, 1);
    const res = await t.inject({ url: '/admin/api/catalog/variants', headers: m.headers });
    expect(res.statusCode).toBe(200);
    const sorted = [...SEED_PRODUCTS].sort((a, b) => a.title.localeCompare(b.title));
    expect(res.json().variants).toEqual(sorted.map((p) => ({ id: p.id, title: p.title, price: { amount: p.price, currencyCode: 'EUR' } })));
  });
});

describe('GET /admin/api/webhook-event-types', () => {
  it('every type an endpoint may subscribe to, in the validating list\'s order, each with what it means', async () => {
    const m = await merchant();
    const res = await t.inject({ url: '/admin/api/webhook-event-types', headers: m.headers });
    expect(res.statusCode).toBe(200);
    const { eventTypes } = res.json() as { eventTypes: { type: string; description: string }[] };
    expect(eventTypes.map((e) => e.type)).toEqual([...WEBHOOK_EVENT_TYPES]);
    for (const type of ['billing.succeeded', 'billing.failed', 'billing.action_required', 'billing.missed', 'billing.attempted', 'bulk_job.previewed', 'bulk_job.finished', 'api_key.leaked', 'contract.updated']) {
      expect(eventTypes.map((e) => e.type)).toContain(type);
    }
    for (const e of eventTypes) expect(e.description, e.type).toMatch(/^[A-Z].{20,}\.$/);
    // contract.updated is an edit's event too, not the platform's only.
    expect(eventTypes.find((e) => e.type === 'contract.updated')!.description).toMatch(/edited/);
    expectError(await t.inject({ url: '/admin/api/webhook-event-types', headers: bearer(m.key) }), 401, 'unauthorized');
  });
});
