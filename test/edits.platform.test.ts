import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from './support/app.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';
import type { ContractInit } from './support/shopify/store.js';

/**
 * Contract edits in platform mode: each edit is a draft on the platform (subscriptionContractUpdate), its operations
 * sent together in one document, then subscriptionDraftCommit; the mirror is written from the committed contract.
 * A preview's draft is never committed, and neither is one an operation of which the platform refused.
 */

let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform();
});
afterAll(async () => {
  await p?.close();
});

type Shop = InstalledShop & { coffee: { id: number }; espresso: { id: number }; oats: { id: number } };
const ADDRESS = { firstName: 'Ada', lastName: 'Lovelace', address1: '12 St James Square', city: 'London', zip: 'SW1Y 4JH', countryCode: 'GB' };

/** A shop with a small catalog and codes, and one contract made on the platform with `init` and mirrored. */
async function shopWithContract(init: ContractInit = {}): Promise<{ s: Shop; id: string }> {
  const installed = await p.install({ contracts: 0 });
  const d = installed.domain;
  const coffee = p.standIn.createVariant(d, { productTitle: 'Coffee', title: '1kg', price: '24.00' });
  const espresso = p.standIn.createVariant(d, { productTitle: 'Espresso beans', title: '500g', price: '14.50' });
  const oats = p.standIn.createVariant(d, { productTitle: 'Oat milk', title: 'Default Title', price: '9.80' });
  p.standIn.createDiscountCode(d, 'WELCOME10', { percentage: 10 });
  p.standIn.createDiscountCode(d, 'SUMMER', { percentage: 20 }, { active: false });
  const c = p.standIn.createContract(d, {
    lines: [{ title: 'Coffee - 1kg', variantId: coffee.id, quantity: 2, currentPrice: { amount: '24.0', currencyCode: 'USD' } }],
    ...init,
  });
  await p.settle();
  return { s: { ...installed, contractIds: [String(c.id)], coffee, espresso, oats }, id: String(c.id) };
}

const edit = (s: InstalledShop, id: string, body: object) =>
  p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/edits`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: body });
const read = async (s: InstalledShop, id: string) => (await p.t.inject({ url: `/api/v1/subscription-contracts/${id}`, headers: bearer(s.key) })).json().contract;
const updates = async (s: InstalledShop, id: string) =>
  ((await p.t.inject({ url: `/api/v1/subscription-contracts/${id}/events`, headers: bearer(s.key) })).json().events as { type: string; actor: { type: string }; data: any }[]).filter(
    (e) => e.type === 'contract.updated',
  );
/** The GraphQL requests svc sent the shop from request number `from` on, with their root fields. */
const sent = (s: InstalledShop, from: number) =>
  p.standIn.requests
    .slice(from)
    .filter((r) => r.endpoint === 'graphql' && r.shop === s.domain)
    .map((r) => (r.rootCalls ?? []).map((c) => c.field));

/** Runs an edit that must succeed; checks the answer is the mirror's, one contract.updated, and the calls made. */
async function committed(s: InstalledShop, id: string, operations: object[]) {
  const from = p.standIn.requests.length;
  const revision = p.standIn.contract(s.domain, id).revisionId;
  const res = await edit(s, id, { operations });
  expect(res.statusCode, res.body).toBe(200);
  const { contract, preview } = res.json();
  expect(preview).toBe(false);
  expect(p.standIn.contract(s.domain, id).revisionId).not.toBe(revision);
  expect(await read(s, id)).toEqual(contract);
  const calls = sent(s, from);
  // The platform's echo of the commit (its webhook) is recorded as nothing new.
  await p.settle();
  const events = await updates(s, id);
  expect(events).toHaveLength(1);
  expect(events[0].actor.type).toBe('api_key');
  expect(await read(s, id)).toEqual(contract);
  return { contract, calls, changes: events[0].data.changes as any[], onPlatform: p.standIn.contract(s.domain, id) };
}

const THREE_CALLS = (n: number, draftOps: string[]) => [['subscriptionContractUpdate'], draftOps, ['subscriptionDraftCommit']].slice(0, n);

describe('each operation is made on the platform’s draft, committed, and mirrored from the committed contract', () => {
  it('set_quantity: the line’s quantity on the platform and in the mirror, totals from the platform’s prices; 3 calls', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    const { contract, calls, changes, onPlatform } = await committed(s, id, [{ op: 'set_quantity', lineId, quantity: 3 }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftLineUpdate']));
    expect(onPlatform.lines.map((l) => [l.id, l.quantity])).toEqual([[Number(lineId), 3]]);
    expect(contract.lines).toEqual([{ id: lineId, title: 'Coffee - 1kg', variantId: String(s.coffee.id), quantity: 3, price: { amount: '24.0', currencyCode: 'USD' } }]);
    expect(contract.totals).toEqual({ subtotal: '72.00', discounts: '0.00', shipping: '0.00', total: '72.00', currencyCode: 'USD' });
    expect(changes).toEqual([{ op: 'set_quantity', lineId, before: { quantity: 2 }, after: { quantity: 3 } }]);
    expect(p.standIn.drafts(s.domain, id).map((d) => d.committed)).toEqual([true]);
  });

  it('add_line with a price: the platform’s new line (its id, its title) in the mirror and the event; 3 calls', async () => {
    const { s, id } = await shopWithContract();
    const { contract, calls, changes, onPlatform } = await committed(s, id, [{ op: 'add_line', variantId: String(s.oats.id), quantity: 2, price: '8.50' }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftLineAdd']));
    const added = onPlatform.lines[1];
    expect(added).toMatchObject({ variantId: s.oats.id, quantity: 2, title: 'Oat milk', currentPrice: { amount: '8.5', currencyCode: 'USD' } });
    expect(contract.lines[1]).toEqual({ id: String(added.id), title: 'Oat milk', variantId: String(s.oats.id), quantity: 2, price: { amount: '8.5', currencyCode: 'USD' } });
    expect(changes).toEqual([{ op: 'add_line', lineId: String(added.id), before: null, after: contract.lines[1] }]);
    expect(contract.totals.subtotal).toBe('65.00');
  });

  it('add_line without a price takes the variant’s, read alongside the draft’s creation', async () => {
    const { s, id } = await shopWithContract();
    const { contract, calls } = await committed(s, id, [{ op: 'add_line', variantId: String(s.espresso.id), quantity: 1 }]);
    expect(calls.flat().sort()).toEqual(['nodes', 'subscriptionContractUpdate', 'subscriptionDraftCommit', 'subscriptionDraftLineAdd'].sort());
    expect(calls.at(-1)).toEqual(['subscriptionDraftCommit']);
    expect(contract.lines[1]).toMatchObject({ title: 'Espresso beans - 500g', price: { amount: '14.5', currencyCode: 'USD' } });
  });

  it('remove_line', async () => {
    const { s, id } = await shopWithContract({
      lines: [
        { title: 'Coffee - 1kg', quantity: 1, currentPrice: { amount: '24.0', currencyCode: 'USD' } },
        { title: 'Oat milk', quantity: 1, currentPrice: { amount: '9.8', currencyCode: 'USD' } },
      ],
    });
    const [, oat] = (await read(s, id)).lines;
    const { contract, calls, changes, onPlatform } = await committed(s, id, [{ op: 'remove_line', lineId: oat.id }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftLineRemove']));
    expect(onPlatform.lines.map((l) => l.title)).toEqual(['Coffee - 1kg']);
    expect(contract.lines.map((l: any) => l.title)).toEqual(['Coffee - 1kg']);
    expect(changes).toEqual([{ op: 'remove_line', lineId: oat.id, before: oat, after: null }]);
  });

  it('swap_variant updates the line’s variant in place (same line id), priced as the variant unless a price is given', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    const { contract, changes, onPlatform } = await committed(s, id, [{ op: 'swap_variant', lineId, variantId: String(s.espresso.id) }]);
    expect(onPlatform.lines).toHaveLength(1);
    expect(onPlatform.lines[0]).toMatchObject({ id: Number(lineId), variantId: s.espresso.id, title: 'Espresso beans - 500g', quantity: 2, currentPrice: { amount: '14.5' } });
    expect(contract.lines[0]).toEqual({ id: lineId, title: 'Espresso beans - 500g', variantId: String(s.espresso.id), quantity: 2, price: { amount: '14.5', currencyCode: 'USD' } });
    expect(changes[0]).toEqual({
      op: 'swap_variant',
      lineId,
      before: { variantId: String(s.coffee.id), title: 'Coffee - 1kg', price: { amount: '24.0', currencyCode: 'USD' } },
      after: { variantId: String(s.espresso.id), title: 'Espresso beans - 500g', price: { amount: '14.5', currencyCode: 'USD' } },
    });
    const priced = await edit(s, id, { operations: [{ op: 'swap_variant', lineId, variantId: String(s.oats.id), price: '7.25' }] });
    expect(priced.json().contract.lines[0]).toMatchObject({ id: lineId, title: 'Oat milk', price: { amount: '7.25' } });
  });

  it('set_frequency: billing and delivery policy on the platform, the next billing date when given', async () => {
    const { s, id } = await shopWithContract();
    const { contract, calls, onPlatform } = await committed(s, id, [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2, nextBillingDate: '2027-01-10T08:00:00Z' }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftUpdate']));
    expect(onPlatform.billingPolicy).toMatchObject({ interval: 'WEEK', intervalCount: 2 });
    expect(onPlatform.deliveryPolicy).toEqual({ interval: 'WEEK', intervalCount: 2 });
    expect(onPlatform.nextBillingDate?.toISOString()).toBe('2027-01-10T08:00:00.000Z');
    expect(contract).toMatchObject({ billingPolicy: { interval: 'WEEK', intervalCount: 2 }, deliveryPolicy: { interval: 'WEEK', intervalCount: 2 }, nextBillingDate: '2027-01-10T08:00:00.000Z' });
  });

  it('set_shipping_address: the delivery method’s address on the platform; the event says only that it changed', async () => {
    const { s, id } = await shopWithContract();
    const { contract, changes, onPlatform } = await committed(s, id, [{ op: 'set_shipping_address', address: ADDRESS }]);
    expect(onPlatform.deliveryMethod?.address).toMatchObject({ ...ADDRESS, address2: null, provinceCode: null, phone: null });
    expect(contract.shippingAddress).toEqual(ADDRESS);
    expect(changes).toEqual([{ op: 'set_shipping_address', before: null, after: null }]);
  });

  it('apply_discount_code: applied on the draft by its code, the contract’s discount as the platform committed it', async () => {
    const { s, id } = await shopWithContract();
    const { contract, calls, changes, onPlatform } = await committed(s, id, [{ op: 'apply_discount_code', code: 'welcome10' }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftDiscountCodeApply']));
    expect(onPlatform.discounts).toMatchObject([{ title: 'WELCOME10', type: 'CODE_DISCOUNT', value: { percentage: 10 } }]);
    const discount = { id: String(onPlatform.discounts[0].id), title: 'WELCOME10', code: 'WELCOME10', value: { type: 'percentage', percentage: 10 } };
    expect(contract.discounts).toEqual([discount]);
    expect(contract.totals).toEqual({ subtotal: '48.00', discounts: '4.80', shipping: '0.00', total: '43.20', currencyCode: 'USD' });
    expect(changes).toEqual([{ op: 'apply_discount_code', discountId: discount.id, before: null, after: discount }]);
  });

  it('remove_discount', async () => {
    const { s, id } = await shopWithContract({ discounts: [{ id: 777001, title: 'LOYAL', type: 'CODE_DISCOUNT', value: { percentage: 5 }, recurringCycleLimit: null, usageCount: 2 }] });
    expect((await read(s, id)).discounts).toEqual([{ id: '777001', title: 'LOYAL', code: 'LOYAL', value: { type: 'percentage', percentage: 5 } }]);
    const { contract, calls, onPlatform } = await committed(s, id, [{ op: 'remove_discount', discountId: '777001' }]);
    expect(calls).toEqual(THREE_CALLS(3, ['subscriptionDraftDiscountRemove']));
    expect(onPlatform.discounts).toEqual([]);
    expect(contract.discounts).toEqual([]);
  });

  it('several operations go in one document, in order, and the draft is committed once: 3 calls for all of them', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    const { contract, calls } = await committed(s, id, [
      { op: 'swap_variant', lineId, variantId: String(s.espresso.id), price: '14.50' },
      { op: 'add_line', variantId: String(s.oats.id), quantity: 2, price: '9.80' },
      { op: 'set_frequency', interval: 'MONTH', intervalCount: 2 },
      { op: 'set_shipping_address', address: ADDRESS },
      { op: 'apply_discount_code', code: 'WELCOME10' },
    ]);
    expect(calls).toEqual(
      THREE_CALLS(3, ['subscriptionDraftLineUpdate', 'subscriptionDraftLineAdd', 'subscriptionDraftUpdate', 'subscriptionDraftUpdate', 'subscriptionDraftDiscountCodeApply']),
    );
    // 2 × 14.50 + 2 × 9.80 = 48.60; 10 % off is 4.86.
    expect(contract.totals).toEqual({ subtotal: '48.60', discounts: '4.86', shipping: '0.00', total: '43.74', currencyCode: 'USD' });
    expect(contract.billingPolicy).toEqual({ interval: 'MONTH', intervalCount: 2 });
  });
});

describe('what the commit answers besides the edit', () => {
  it('a change made on the platform meanwhile (its webhook not yet processed) is recorded after the edit, as the platform’s', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    // The shop admin moves the next billing date; svc has not processed the webhook yet.
    p.standIn.platform.update(s.domain, id, { nextBillingDate: '2027-02-02T00:00:00Z' });
    const res = await edit(s, id, { operations: [{ op: 'set_quantity', lineId, quantity: 4 }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().contract).toMatchObject({ nextBillingDate: '2027-02-02T00:00:00.000Z', lines: [{ quantity: 4 }] });
    const events = await updates(s, id);
    expect(events.map((e) => [e.actor.type, e.data.changes?.map((c: any) => c.op) ?? e.data.changed]).reverse()).toEqual([
      ['api_key', ['set_quantity']],
      ['platform', ['nextBillingDate']],
    ]);
    await p.settle();
    expect(await updates(s, id)).toHaveLength(2);
  });
});

describe('outages and retries', () => {
  it('the platform failing on the operations’ document: 503 platform_unavailable, no draft committed, nothing changed', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    const before = await read(s, id);
    p.standIn.faults.add({ kind: 'error', status: 503 }, { shop: s.domain, operation: 'subscriptionDraftLineUpdate' });
    const res = await edit(s, id, { operations: [{ op: 'set_quantity', lineId, quantity: 6 }] });
    expect(res.statusCode).toBe(503);
    expect(res.json().error.code).toBe('platform_unavailable');
    expect(p.standIn.drafts(s.domain, id).map((d) => d.committed)).toEqual([false]);
    expect(p.standIn.contract(s.domain, id).lines[0].quantity).toBe(2);
    expect(await read(s, id)).toEqual(before);
    // The contract is free again: the same edit goes through.
    expect((await edit(s, id, { operations: [{ op: 'set_quantity', lineId, quantity: 6 }] })).statusCode).toBe(200);
  });

  it('a commit whose answer never came: 503 saying the edit may have been made, which it was on the platform', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    p.standIn.faults.add({ kind: 'hangup' }, { shop: s.domain, operation: 'subscriptionDraftCommit', when: 'after' });
    const res = await edit(s, id, { operations: [{ op: 'set_quantity', lineId, quantity: 5 }] });
    expect(res.statusCode).toBe(503);
    expect(res.json().error).toMatchObject({ code: 'platform_unavailable', message: expect.stringContaining('it may have been made there') });
    expect(res.json().error.message).not.toContain('Nothing was changed');
    expect(p.standIn.contract(s.domain, id).lines[0].quantity).toBe(5);
  });

  it('an Idempotency-Key replays a committed edit: made on the platform once, the same answer', async () => {
    const { s, id } = await shopWithContract();
    const body = { operations: [{ op: 'add_line', variantId: String(s.oats.id), quantity: 1, price: '9.80' }] };
    const send = () =>
      p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/edits`, headers: { ...bearer(s.key), 'content-type': 'application/json', 'idempotency-key': 'edit-once' }, payload: body });
    const first = await send();
    const from = p.standIn.requests.length;
    const again = await send();
    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(sent(s, from)).toEqual([]);
    expect(p.standIn.contract(s.domain, id).lines).toHaveLength(2);
    expect(p.standIn.drafts(s.domain, id).filter((d) => d.committed)).toHaveLength(1);
  });
});

describe('preview: a draft that is never committed', () => {
  it('answers the contract as the platform’s draft has it, with its totals, in 2 calls; nothing changes anywhere', async () => {
    const { s, id } = await shopWithContract();
    const before = await read(s, id);
    const revision = p.standIn.contract(s.domain, id).revisionId;
    const from = p.standIn.requests.length;
    const res = await edit(s, id, {
      preview: true,
      operations: [
        { op: 'set_quantity', lineId: before.lines[0].id, quantity: 3 },
        { op: 'add_line', variantId: String(s.oats.id), quantity: 1, price: '8.00' },
        { op: 'apply_discount_code', code: 'WELCOME10' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const { contract, preview } = res.json();
    expect(preview).toBe(true);
    expect(sent(s, from)).toEqual([['subscriptionContractUpdate'], ['subscriptionDraftLineUpdate', 'subscriptionDraftLineAdd', 'subscriptionDraftDiscountCodeApply']]);
    expect(contract.lines.map((l: any) => [l.title, l.quantity, l.price.amount])).toEqual([
      ['Coffee - 1kg', 3, '24.0'],
      ['Oat milk', 1, '8.0'],
    ]);
    // The code's amount is what the platform's draft takes off its lines: 10 % of 80.00.
    expect(contract.discounts).toEqual([{ id: expect.any(String), title: 'WELCOME10', code: 'WELCOME10', value: { type: 'fixed_amount', amount: { amount: '8.00', currencyCode: 'USD' } } }]);
    expect(contract.totals).toEqual({ subtotal: '80.00', discounts: '8.00', shipping: '0.00', total: '72.00', currencyCode: 'USD' });
    // Nothing changed: the platform's contract, its drafts (none committed), the mirror, the history.
    expect(p.standIn.contract(s.domain, id).revisionId).toBe(revision);
    expect(p.standIn.contract(s.domain, id).lines.map((l) => l.quantity)).toEqual([2]);
    expect(p.standIn.drafts(s.domain, id).map((d) => d.committed)).toEqual([false]);
    expect(await read(s, id)).toEqual(before);
    expect(await updates(s, id)).toEqual([]);
  });

  it('a preview that the platform refuses is 422 like the edit, and still commits nothing', async () => {
    const { s, id } = await shopWithContract();
    const res = await edit(s, id, { preview: true, operations: [{ op: 'apply_discount_code', code: 'NOPE' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('invalid_edit');
    expect(p.standIn.drafts(s.domain, id).map((d) => d.committed)).toEqual([false]);
  });
});

describe('a failing operation commits nothing', () => {
  async function refused(s: InstalledShop, id: string, operations: object[]) {
    const before = await read(s, id);
    const revision = p.standIn.contract(s.domain, id).revisionId;
    const from = p.standIn.requests.length;
    const res = await edit(s, id, { operations });
    expect(res.statusCode, res.body).toBe(422);
    expect(p.standIn.contract(s.domain, id).revisionId).toBe(revision);
    expect(p.standIn.drafts(s.domain, id).every((d) => !d.committed)).toBe(true);
    expect(sent(s, from).flat()).not.toContain('subscriptionDraftCommit');
    expect(await read(s, id)).toEqual(before);
    expect(await updates(s, id)).toEqual([]);
    return res.json().error;
  }

  it('the platform’s userError on one operation: 422 invalid_edit naming it, with the platform’s message and field', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    const error = await refused(s, id, [
      { op: 'set_quantity', lineId, quantity: 4 },
      { op: 'add_line', variantId: '999999999', quantity: 1, price: '5.00' },
    ]);
    expect(error.code).toBe('invalid_edit');
    expect(error.details).toEqual([{ path: 'operations.1', message: 'the platform says "Product variant does not exist" (input.productVariantId)' }]);
    expect(error.message).toContain('operations.1');
  });

  it('an unknown code, and a code the platform applies with a rejection reason, are both invalid_edit', async () => {
    const { s, id } = await shopWithContract();
    const unknown = await refused(s, id, [{ op: 'apply_discount_code', code: 'NOPE' }]);
    expect(unknown.details).toEqual([{ path: 'operations.0', message: 'the platform says "Discount code is invalid" (redeemCode)' }]);
    const inactive = await refused(s, id, [{ op: 'apply_discount_code', code: 'SUMMER' }]);
    expect(inactive.details).toEqual([{ path: 'operations.0', message: 'the code "SUMMER" does not apply to this contract (the platform says CURRENTLY_INACTIVE)' }]);
  });

  it('a country code the platform’s schema does not have: refused before any call', async () => {
    const { s, id } = await shopWithContract();
    const from = p.standIn.requests.length;
    const error = await refused(s, id, [{ op: 'set_shipping_address', address: { ...ADDRESS, countryCode: 'QQ' } }]);
    expect(error.details).toEqual([{ path: 'operations.0.address.countryCode', message: 'the platform does not know the country code "QQ"' }]);
    expect(sent(s, from)).toEqual([]);
  });

  it('a variant the platform does not know, without a price: refused before any draft mutation', async () => {
    const { s, id } = await shopWithContract();
    const error = await refused(s, id, [{ op: 'add_line', variantId: '999999998', quantity: 1 }]);
    expect(error.details).toEqual([{ path: 'operations.0', message: 'unknown variant "999999998"' }]);
  });

  it('the commit refused: 422 platform_rejected with the platform’s message; the mirror unchanged', async () => {
    const { s, id } = await shopWithContract();
    const lineId = (await read(s, id)).lines[0].id;
    p.standIn.faults.userError({ mutation: 'subscriptionDraftCommit', message: 'The contract has future edits', code: 'HAS_FUTURE_EDITS' }, { shop: s.domain });
    const before = await read(s, id);
    const res = await edit(s, id, { operations: [{ op: 'set_quantity', lineId, quantity: 5 }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: 'platform_rejected', message: expect.stringContaining('The contract has future edits') });
    expect(p.standIn.contract(s.domain, id).lines[0].quantity).toBe(2);
    expect(await read(s, id)).toEqual(before);
    expect(await updates(s, id)).toEqual([]);
  });
});
