import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AttemptState } from '../src/domain/billing.js';
import { toContract } from '../src/domain/resources.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, insertContract } from './support/fixtures.js';

/*
 * A GET of a contract is written around the json columns as the database gives them (domain/resources.ts
 * contractJsonOf), while every other answer writes toContract with JSON.stringify. The two must be the same text,
 * byte for byte, whatever the contract holds: text with quotes, backslashes, control characters, any script, line
 * and paragraph separators; fractional percentages; every optional part present or absent.
 */

let t: TestApp;
let shop: { shopId: string; key: string };

beforeAll(async () => {
  t = await startTestApp();
  shop = await t.shopWithKey('enterprise');
});
afterAll(() => t.close());

// Any text PostgreSQL can hold (no NUL), with the characters JSON writes specially mixed in.
const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.array(fc.constantFrom('"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', '\u2028', 'é', '日本', '🙂', ' : ', ', ', '/'), { maxLength: 8 }).map((a) => a.join('')),
);
const money = fc.record({ amount: fc.constantFrom('0.00', '24.00', '1234.56'), currencyCode: fc.constantFrom('EUR', 'USD') });
const iso = fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());

const attempt: fc.Arbitrary<AttemptState> = fc.record({
  id: fc.uuid(),
  cycleDate: iso,
  attempt: fc.integer({ min: 1, max: 9 }),
  trigger: fc.constantFrom('schedule', 'retry', 'bill_now'),
  status: fc.constantFrom('pending', 'succeeded', 'failed', 'action_required'),
  errorCode: fc.constantFrom(null, 'card_declined', 'insufficient_funds'),
  platformErrorCode: fc.option(text),
  errorMessage: fc.option(text),
  nextActionUrl: fc.option(fc.constant('https://pay.example.com/authenticate?x=1&y="2"')),
  order: fc.option(fc.record({ id: fc.constant('1'), name: fc.constant('#1001'), amount: fc.constant('24.00'), currencyCode: fc.constant('EUR') })),
  amount: money,
  createdAt: iso,
  completedAt: fc.option(iso),
}) as fc.Arbitrary<AttemptState>;

const contract = fc.record({
  status: fc.constantFrom('ACTIVE', 'PAUSED', 'CANCELLED'),
  customerEmail: text,
  cancellationReason: fc.option(text),
  resumeAt: fc.option(fc.constant(new Date('2031-01-01T00:00:00.000Z'))),
  lines: fc.array(fc.record({ title: text, variantId: fc.constantFrom('51', '52'), quantity: fc.integer({ min: 1, max: 99 }), price: money }), { minLength: 1, maxLength: 3 }),
  shippingAddress: fc.option(
    fc.record(
      { firstName: text, lastName: text, address1: text, address2: fc.option(text), city: text, provinceCode: fc.option(text), zip: text, countryCode: fc.constant('FR'), phone: fc.option(text) },
      { requiredKeys: ['firstName', 'lastName', 'address1', 'city', 'zip', 'countryCode'] },
    ),
  ),
  discounts: fc.array(
    fc.record({
      id: fc.uuid(),
      title: text,
      code: fc.option(text),
      value: fc.oneof(
        fc.record({ type: fc.constant('percentage' as const), percentage: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0.01, max: 100, noNaN: true })) }),
        fc.record({ type: fc.constant('fixed_amount' as const), amount: money }),
      ),
    }),
    { maxLength: 2 },
  ),
  billingLastAttempt: fc.option(attempt),
  billingNextAttemptAt: fc.option(fc.constant(new Date('2026-12-03T10:00:00.123Z'))),
});

it('a GET answers with exactly the text JSON.stringify writes of the contract, whatever it holds', async () => {
  await fc.assert(
    fc.asyncProperty(contract, async (c) => {
      // fast-check's records have no prototype, which the query builder does not take: plain objects, dates kept.
      const plain = { ...JSON.parse(JSON.stringify(c)), resumeAt: c.resumeAt, billingNextAttemptAt: c.billingNextAttemptAt };
      const inserted = await insertContract(t, shop.shopId, plain);
      const res = await t.inject({ method: 'GET', url: `${API}/${inserted.id}`, headers: bearer(shop.key) });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(JSON.stringify({ contract: toContract(await contractRow(t, inserted.id)) }));
    }),
    { numRuns: 60 },
  );
});

it('an action and an edit answer with exactly the text JSON.stringify writes of the contract after them', async () => {
  await fc.assert(
    // (Neither is allowed while an attempt awaits its outcome, nor on a cancelled contract.)
    fc.asyncProperty(contract.filter((c) => c.status !== 'CANCELLED' && c.billingLastAttempt?.status !== 'pending'), async (c) => {
      const plain = { ...JSON.parse(JSON.stringify(c)), resumeAt: c.resumeAt, billingNextAttemptAt: c.billingNextAttemptAt };
      const inserted = await insertContract(t, shop.shopId, plain);
      const url = `${API}/${inserted.id}`;
      const act = await t.inject({ method: 'POST', url: `${url}/actions`, headers: bearer(shop.key), payload: { action: c.status === 'ACTIVE' ? 'pause' : 'resume' } });
      expect(act.statusCode).toBe(200);
      expect(act.body).toBe(JSON.stringify({ contract: toContract(await contractRow(t, inserted.id)) }));
      // The lines and totals change; the address and discounts stay as they were stored.
      const lineId = (act.json().contract.lines as { id: string }[])[0].id;
      const edit = await t.inject({ method: 'POST', url: `${url}/edits`, headers: bearer(shop.key), payload: { operations: [{ op: 'set_quantity', lineId, quantity: 100 }] } });
      expect(edit.statusCode).toBe(200);
      expect(edit.body).toBe(JSON.stringify({ contract: toContract(await contractRow(t, inserted.id)), preview: false }));
    }),
    { numRuns: 30 },
  );
});

it('a contract whose resume is due is resumed before it is answered, in the same text', async () => {
  const inserted = await insertContract(t, shop.shopId, { status: 'PAUSED', pausedAt: t.clock.now(), resumeAt: t.clock.now() });
  const res = await t.inject({ method: 'GET', url: `${API}/${inserted.id}`, headers: bearer(shop.key) });
  expect(res.json().contract.status).toBe('ACTIVE');
  expect(res.body).toBe(JSON.stringify({ contract: toContract(await contractRow(t, inserted.id)) }));
});
