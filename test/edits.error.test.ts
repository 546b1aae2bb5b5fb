import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProducts } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { generateKey } from '../src/services/generateKey.js';
import { API, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/** Edits that cannot apply: a clear error naming the operation, and nothing changed anywhere. */

let t: TestApp;
let key: string;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
  await seedProducts(t.ctx, shopId);
});
afterAll(() => t.close());

const edit = (id: string, body: unknown, k = key) => t.inject({ method: 'POST', url: `${API}/${id}/edits`, headers: bearer(k), payload: body as object });

async function unchanged(id: string, version: number) {
  expect((await contractRow(t, id)).version).toBe(version);
  expect(await eventRows(t, id)).toEqual([]);
}

describe('an edit that cannot apply: 422 invalid_edit, details name each operation and why', () => {
  it('an unknown line, an unknown variant, a code that does not exist, and the last line: all named, nothing changed', async () => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, {
      operations: [
        { op: 'set_quantity', lineId: 'nope', quantity: 2 },
        { op: 'add_line', variantId: '99999', quantity: 1 },
        { op: 'apply_discount_code', code: 'NOSUCHCODE' },
        { op: 'remove_line', lineId: c.lines[0].id },
      ],
    });
    const error = expectError(res, 422, 'invalid_edit');
    expect(error.details).toEqual([
      { path: 'operations.0', message: 'no line with id "nope" in this contract' },
      { path: 'operations.1', message: 'unknown variant "99999"' },
      { path: 'operations.2', message: 'the code "NOSUCHCODE" does not exist or does not apply to this contract' },
      { path: 'operations.3', message: 'the last line cannot be removed: cancel the contract instead' },
    ]);
    expect(error.message).toMatch(/operations\.0 .*\(and 3 more\).*Nothing was changed/);
    await unchanged(c.id, c.version);
  });

  it('one bad operation among good ones: all or nothing', async () => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 9 }, { op: 'remove_discount', discountId: 'd-none' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details).toEqual([{ path: 'operations.1', message: 'no discount with id "d-none" on this contract' }]);
    await unchanged(c.id, c.version);
    expect((await contractRow(t, c.id)).lines[0].quantity).toBe(2);
  });

  it('a preview is validated the same way', async () => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, { operations: [{ op: 'swap_variant', lineId: c.lines[0].id, variantId: '12345' }], preview: true });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details).toEqual([{ path: 'operations.0', message: 'unknown variant "12345"' }]);
  });
});

describe('a malformed edit: 400 invalid_request naming the field', () => {
  it.each([
    [{}, 'operations'],
    [{ operations: [] }, 'operations'],
    [{ operations: [{ op: 'sing_a_song' }] }, 'operations.0.op'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 0 }] }, 'operations.0.quantity'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 1000 }] }, 'operations.0.quantity'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 1.5 }] }, 'operations.0.quantity'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 1, extra: true }] }, 'operations.0.extra'],
    [{ operations: [{ op: 'add_line', variantId: 'gid://x', quantity: 1 }] }, 'operations.0.variantId'],
    [{ operations: [{ op: 'add_line', variantId: '40001', quantity: 1, price: 12.5 }] }, 'operations.0.price'],
    [{ operations: [{ op: 'add_line', variantId: '40001', quantity: 1, price: '-1.00' }] }, 'operations.0.price'],
    [{ operations: [{ op: 'set_frequency', interval: 'FORTNIGHT', intervalCount: 1 }] }, 'operations.0.interval'],
    [{ operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 1, nextBillingDate: '2020-01-01T00:00:00Z' }] }, 'operations.0.nextBillingDate'],
    [{ operations: [{ op: 'set_shipping_address', address: { firstName: 'Ada' } }] }, 'operations.0.address.lastName'],
    [{ operations: [{ op: 'set_shipping_address', address: { firstName: 'A', lastName: 'L', address1: '1 Road', city: 'C', zip: '1', countryCode: 'Germany' } }] }, 'operations.0.address.countryCode'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 1 }], preview: 'yes' }, 'preview'],
    [{ operations: [{ op: 'set_quantity', lineId: 'x', quantity: 1 }], extra: 1 }, 'extra'],
  ])('%j → names %s', async (body, path) => {
    const c = await insertContract(t, shopId);
    const res = await edit(c.id, body);
    const error = expectError(res, 400, 'invalid_request');
    expect(error.details!.map((d) => d.path)).toContain(path);
    await unchanged(c.id, c.version);
  });
});

describe('who may edit what', () => {
  it('a CANCELLED or EXPIRED contract: 409 invalid_state naming the allowed statuses', async () => {
    for (const status of ['CANCELLED', 'EXPIRED', 'FAILED'] as const) {
      const c = await insertContract(t, shopId, { status });
      const res = await edit(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 3 }] });
      expect(expectError(res, 409, 'invalid_state').message).toBe(`Cannot edit a contract that is ${status}; edit is allowed only from ACTIVE or PAUSED.`);
      await unchanged(c.id, c.version);
    }
  });

  it('a read-only key: 403 insufficient_scope; another shop\'s contract: 404', async () => {
    const c = await insertContract(t, shopId);
    const ro = (await generateKey({ ctx: t.ctx, input: { shopId, name: 'ro', access: 'read_only' } })).secret;
    expectError(await edit(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 3 }] }, ro), 403, 'insufficient_scope');
    const other = await t.shopWithKey();
    const res = await edit(c.id, { operations: [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 3 }] }, other.key);
    expect(res.statusCode).toBe(404);
    await unchanged(c.id, c.version);
  });
});
