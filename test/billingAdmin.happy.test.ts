import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillingOutcome } from '../src/domain/billing.js';
import { changeContract } from '../src/services/changeContract.js';
import { recordBillingOutcome } from '../src/services/recordBillingOutcome.js';
import { SYSTEM } from '../src/services/principal.js';
import { startTestApp, type TestApp } from './support/app.js';
import { adminAuth, contractRow, expectError, insertContract, sql } from './support/fixtures.js';

/**
 * Renewals in the admin's JSON API (session token): a contract's billing attempts, the shop's dunning policy, and
 * the Renewals overview, over attempts made and settled by the real billing commands and outcomes.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const json = { 'content-type': 'application/json' };

async function merchant() {
  const s = await t.shopWithKey();
  // A token signed at the test clock's now, for each request: the tests move the clock between days.
  const headers = () => adminAuth(t, s.domain);
  const get = async (url: string) => t.inject({ url: `/admin/api${url}`, headers: await headers() });
  const put = async (url: string, payload: unknown) =>
    t.inject({ method: 'PUT', url: `/admin/api${url}`, headers: { ...(await headers()), ...json }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
  return { ...s, headers, get, put };
}

/** One attempt of the contract's due cycle (or its retry), as the billing worker makes it, then its outcome. */
async function bill(shopId: string, contractId: string, outcome: BillingOutcome | null): Promise<string> {
  const attemptId = randomUUID();
  const committed = await changeContract(t.ctx, {
    shopId,
    contractId,
    read: await contractRow(t, contractId),
    request: { command: { name: 'bill', input: { attemptId, maxLateMs: 3 * DAY } }, actor: SYSTEM.billing.actor },
  });
  expect(committed?.changed, 'the contract was due').toBe(true);
  if (outcome) await recordBillingOutcome(t.ctx, { shopId, attemptId, outcome });
  return attemptId;
}
const paid = (amount: string, currencyCode = 'EUR'): BillingOutcome => ({ kind: 'succeeded', order: { id: randomUUID(), name: '#1001', amount, currencyCode } });
const declined = (errorCode: 'insufficient_funds' | 'card_declined'): BillingOutcome => ({ kind: 'failed', errorCode, platformErrorCode: errorCode.toUpperCase(), message: `The bank said ${errorCode}` });
const line = (amount: string, currencyCode = 'EUR') => [{ title: 'Coffee', variantId: '51', quantity: 1, price: { amount, currencyCode } }];

describe('the Renewals overview', () => {
  it('counts each day\'s attempts, failures by code, recoveries and exact revenue, and the renewals due ahead', async () => {
    const m = await merchant();
    const other = await merchant();
    const d0 = new Date('2026-11-10T09:00:00.000Z');
    t.clock.set(d0);
    const due = new Date(d0.getTime() - HOUR);
    const a = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('48.00') });
    const b = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('0.10') });
    const c = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('0.20') });
    const d = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('10.00', 'USD') });
    const e = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('5.00') });
    // Another shop's attempts on the same day: never in this shop's figures.
    const theirs = await insertContract(t, other.shopId, { nextBillingDate: due, lines: line('999.99') });

    await bill(m.shopId, a.id, paid('48.00'));
    await bill(m.shopId, b.id, paid('0.10'));
    await bill(m.shopId, c.id, paid('0.20'));
    await bill(m.shopId, d.id, declined('insufficient_funds'));
    await bill(m.shopId, e.id, declined('card_declined'));
    await bill(other.shopId, theirs.id, paid('999.99'));
    // The next day the failed USD payment is retried (the default policy waits a day) and goes through: recovered.
    t.clock.set(new Date(d0.getTime() + DAY + 60_000));
    await bill(m.shopId, d.id, paid('10.00', 'USD'));
    // A pending attempt counts as made, with no outcome yet.
    const pending = await insertContract(t, m.shopId, { nextBillingDate: new Date(t.clock.now().getTime() - HOUR), lines: line('3.00') });
    await bill(m.shopId, pending.id, null);

    // Ten days on: every second day from the 22nd a 7.00 renewal; a paused contract and a far one are not due.
    const now = new Date('2026-11-20T12:00:00.000Z');
    t.clock.set(now);
    await insertContract(t, m.shopId, { nextBillingDate: new Date('2026-11-22T08:00:00.000Z'), billingInterval: 'DAY', billingIntervalCount: 2, lines: line('7.00') });
    await insertContract(t, m.shopId, { status: 'PAUSED', pausedAt: now, nextBillingDate: new Date('2026-11-23T08:00:00.000Z'), lines: line('100.00') });
    await insertContract(t, m.shopId, { nextBillingDate: new Date('2026-11-28T00:00:00.000Z'), lines: line('100.00') });

    const res = await m.get('/renewals?days=30&ahead=7');
    expect(res.statusCode, res.body).toBe(200);
    const o = res.json();
    expect({ from: o.from, today: o.today, to: o.to, days: o.days.length }).toEqual({ from: '2026-10-22', today: '2026-11-20', to: '2026-11-27', days: 37 });
    const day = (date: string) => o.days.find((x: { date: string }) => x.date === date);
    expect(day('2026-11-10')).toEqual({
      date: '2026-11-10',
      billed: {
        attempts: 5,
        succeeded: 3,
        failed: 2,
        failedByCode: [
          { errorCode: 'card_declined', count: 1 },
          { errorCode: 'insufficient_funds', count: 1 },
        ],
        actionRequired: 0,
        pending: 0,
        recovered: 0,
        // 48.00 + 0.10 + 0.20, summed exactly (a float sum would be 48.300000000000004).
        revenue: [{ amount: '48.30', currencyCode: 'EUR' }],
      },
      due: null,
    });
    expect(day('2026-11-11').billed).toMatchObject({ attempts: 2, succeeded: 1, pending: 1, recovered: 1, failed: 0, revenue: [{ amount: '10.00', currencyCode: 'USD' }] });
    expect(day('2026-11-12').billed).toEqual({ attempts: 0, succeeded: 0, failed: 0, failedByCode: [], actionRequired: 0, pending: 0, recovered: 0, revenue: [] });
    // Today: the card_declined retry is overdue (nothing billed it yet), so it is due now.
    expect(day('2026-11-20').due).toEqual({ renewals: 1, expectedRevenue: [{ amount: '5.00', currencyCode: 'EUR' }] });
    expect(day('2026-11-20').billed.attempts).toBe(0);
    expect(day('2026-11-21')).toEqual({ date: '2026-11-21', billed: null, due: { renewals: 0, expectedRevenue: [] } });
    for (const date of ['2026-11-22', '2026-11-24', '2026-11-26']) expect(day(date).due, date).toEqual({ renewals: 1, expectedRevenue: [{ amount: '7.00', currencyCode: 'EUR' }] });
    expect(day('2026-11-23').due.renewals).toBe(0);
    expect(day('2026-11-27').due.renewals).toBe(0);
    expect(o.totals).toEqual({
      billed: {
        attempts: 7,
        succeeded: 4,
        failed: 2,
        failedByCode: [
          { errorCode: 'card_declined', count: 1 },
          { errorCode: 'insufficient_funds', count: 1 },
        ],
        actionRequired: 0,
        pending: 1,
        recovered: 1,
        revenue: [
          { amount: '48.30', currencyCode: 'EUR' },
          { amount: '10.00', currencyCode: 'USD' },
        ],
      },
      due: { renewals: 4, expectedRevenue: [{ amount: '26.00', currencyCode: 'EUR' }] },
    });

    // The other shop sees only its own attempt.
    const theirsRes = await other.get('/renewals');
    expect(theirsRes.statusCode).toBe(200);
    expect(theirsRes.json().totals.billed).toMatchObject({ attempts: 1, succeeded: 1, revenue: [{ amount: '999.99', currencyCode: 'EUR' }] });
    expect(theirsRes.json().days).toHaveLength(37);

    // A shorter window leaves the older days out.
    const week = (await m.get('/renewals?days=7&ahead=0')).json();
    expect({ from: week.from, to: week.to, days: week.days.length, attempts: week.totals.billed.attempts }).toEqual({ from: '2026-11-14', to: '2026-11-20', days: 7, attempts: 0 });
    expect(week.totals.due).toEqual({ renewals: 1, expectedRevenue: [{ amount: '5.00', currencyCode: 'EUR' }] });
  });

  it('counts as recovered a retry that succeeded after the customer did not confirm, not the confirmation itself', async () => {
    const m = await merchant();
    const d0 = new Date('2026-11-12T09:00:00.000Z');
    t.clock.set(d0);
    const due = new Date(d0.getTime() - HOUR);
    const confirmed = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('20.00') });
    const retried = await insertContract(t, m.shopId, { nextBillingDate: due, lines: line('30.00') });
    const challenge: BillingOutcome = { kind: 'action_required', nextActionUrl: 'https://pay.example/confirm' };
    // The customer confirms the same attempt: a success, but nothing was recovered.
    const attempt = await bill(m.shopId, confirmed.id, challenge);
    await recordBillingOutcome(t.ctx, { shopId: m.shopId, attemptId: attempt, outcome: paid('20.00') });
    // The customer never confirms; the retry a day later goes through: recovered.
    await bill(m.shopId, retried.id, challenge);
    t.clock.set(new Date(d0.getTime() + DAY + 60_000));
    await bill(m.shopId, retried.id, paid('30.00'));

    const o = (await m.get('/renewals?days=2&ahead=0')).json();
    expect(o.days.map((d: { date: string; billed: object }) => [d.date, d.billed])).toEqual([
      ['2026-11-12', { attempts: 2, succeeded: 1, failed: 0, failedByCode: [], actionRequired: 1, pending: 0, recovered: 0, revenue: [{ amount: '20.00', currencyCode: 'EUR' }] }],
      ['2026-11-13', { attempts: 1, succeeded: 1, failed: 0, failedByCode: [], actionRequired: 0, pending: 0, recovered: 1, revenue: [{ amount: '30.00', currencyCode: 'EUR' }] }],
    ]);
  });

  it('is empty for a shop that has billed nothing yet', async () => {
    const m = await merchant();
    const o = (await m.get('/renewals')).json();
    expect(o.days).toHaveLength(37);
    expect(o.totals).toEqual({
      billed: { attempts: 0, succeeded: 0, failed: 0, failedByCode: [], actionRequired: 0, pending: 0, recovered: 0, revenue: [] },
      due: { renewals: 0, expectedRevenue: [] },
    });
  });

  it('refuses a bad query with invalid_request naming the parameter', async () => {
    const m = await merchant();
    for (const [qs, path] of [
      ['days=0', 'days'],
      ['days=91', 'days'],
      ['days=abc', 'days'],
      ['ahead=32', 'ahead'],
      ['ahead=-1', 'ahead'],
      ['days=1.5', 'days'],
      ['since=2026-11-01', 'since'],
    ]) {
      const e = expectError(await m.get(`/renewals?${qs}`), 400, 'invalid_request');
      expect(JSON.stringify(e), qs).toContain(path);
    }
    expectError(await t.inject({ url: '/admin/api/renewals' }), 401, 'unauthorized');
  });
});

describe('a contract\'s billing attempts', () => {
  it('lists every attempt of the contract newest first, a page at a time, with outcomes and orders', async () => {
    const m = await merchant();
    t.clock.set(new Date('2026-11-10T09:00:00.000Z'));
    const c = await insertContract(t, m.shopId, { nextBillingDate: new Date('2026-11-10T08:00:00.000Z'), lines: line('12.34') });
    const first = await bill(m.shopId, c.id, declined('insufficient_funds'));
    t.clock.advance(DAY + 1000);
    const second = await bill(m.shopId, c.id, paid('12.34'));

    const res = await m.get(`/contracts/${c.id}/billing-attempts`);
    expect(res.statusCode, res.body).toBe(200);
    const { billingAttempts: attempts, nextCursor } = res.json();
    expect(nextCursor).toBeNull();
    expect(attempts.map((a: { id: string }) => a.id)).toEqual([second, first]);
    expect(attempts[1]).toMatchObject({
      contractId: c.id,
      cycleDate: '2026-11-10T08:00:00.000Z',
      attempt: 1,
      trigger: 'schedule',
      status: 'failed',
      errorCode: 'insufficient_funds',
      platformErrorCode: 'INSUFFICIENT_FUNDS',
      errorMessage: 'The bank said insufficient_funds',
      order: null,
      amount: { amount: '12.34', currencyCode: 'EUR' },
      createdAt: '2026-11-10T09:00:00.000Z',
    });
    expect(attempts[0]).toMatchObject({ attempt: 2, trigger: 'retry', status: 'succeeded', order: { name: '#1001', amount: '12.34', currencyCode: 'EUR' } });

    const p1 = (await m.get(`/contracts/${c.id}/billing-attempts?limit=1`)).json();
    expect(p1.billingAttempts.map((a: { id: string }) => a.id)).toEqual([second]);
    const p2 = (await m.get(`/contracts/${c.id}/billing-attempts?limit=1&cursor=${p1.nextCursor}`)).json();
    expect(p2).toMatchObject({ billingAttempts: [{ id: first }], nextCursor: null });

    // Another shop's contract is not found; bad parameters are refused.
    const other = await merchant();
    expectError(await other.get(`/contracts/${c.id}/billing-attempts`), 404, 'not_found');
    expectError(await m.get(`/contracts/${c.id}/billing-attempts?cursor=nope`), 400, 'invalid_request');
    expectError(await m.get(`/contracts/${c.id}/billing-attempts?limit=0`), 400, 'invalid_request');
    expectError(await m.get('/contracts/abc/billing-attempts'), 400, 'invalid_request');
  });
});

// GET/PUT /admin/api/billing-policy are the renewals core's routes; the admin's form relies on what these show.
describe('Settings → Billing: the dunning policy', () => {
  it('is the default until saved; a saved policy is the shop\'s alone and governs its retries', async () => {
    const m = await merchant();
    const other = await merchant();
    const byDefault = { paymentRetries: ['P1D', 'P3D', 'P7D'], inventoryRetries: { every: 'P1D', max: 5 }, finalAction: 'fail' };
    expect((await m.get('/billing-policy')).json()).toEqual(byDefault);
    t.clock.set(new Date('2026-11-10T09:00:00.000Z'));
    const policy = { paymentRetries: ['PT2H', 'P2D'], inventoryRetries: { every: 'PT12H', max: 2 }, finalAction: 'pause' };
    const saved = await m.put('/billing-policy', policy);
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.json()).toEqual(policy);
    expect((await m.get('/billing-policy')).json()).toEqual(policy);
    expect((await other.get('/billing-policy')).json()).toEqual(byDefault);

    // The billing outcome reads it: the first retry of a failed payment is two hours later, not a day.
    const c = await insertContract(t, m.shopId, { nextBillingDate: new Date('2026-11-10T08:00:00.000Z') });
    await bill(m.shopId, c.id, declined('card_declined'));
    const after = (await m.get(`/contracts/${c.id}`)).json().contract;
    expect(after.billing).toMatchObject({ status: 'retrying', failedAttempts: 1, nextAttemptAt: '2026-11-10T11:00:00.000Z' });
  });

  it('refuses a bad policy with invalid_request naming each field, and keeps the one saved', async () => {
    const m = await merchant();
    const good = { paymentRetries: ['P1D'], inventoryRetries: { every: 'P1D', max: 1 }, finalAction: 'skip' };
    expect((await m.put('/billing-policy', good)).statusCode).toBe(200);
    const cases: [unknown, string][] = [
      [{ ...good, paymentRetries: ['P1D', 'P2M'] }, 'paymentRetries.1'],
      [{ ...good, paymentRetries: ['P31D'] }, 'paymentRetries.0'],
      [{ ...good, paymentRetries: ['PT0S'] }, 'paymentRetries.0'],
      [{ ...good, paymentRetries: Array(11).fill('P1D') }, 'paymentRetries'],
      [{ ...good, inventoryRetries: { every: 'tomorrow', max: 1 } }, 'inventoryRetries.every'],
      [{ ...good, inventoryRetries: { every: 'P1D', max: 11 } }, 'inventoryRetries.max'],
      [{ ...good, finalAction: 'explode' }, 'finalAction'],
      [{ ...good, colour: 'red' }, 'colour'],
      [{ paymentRetries: ['P1D'] }, 'inventoryRetries'],
    ];
    for (const [body, path] of cases) {
      const e = expectError(await m.put('/billing-policy', body), 400, 'invalid_request');
      expect(e.details?.map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expectError(await m.put('/billing-policy', 'not json'), 400, 'invalid_request');
    const text = await t.inject({ method: 'PUT', url: '/admin/api/billing-policy', headers: { ...(await m.headers()), 'content-type': 'text/plain' }, payload: 'x' });
    expectError(text, 415, 'unsupported_media_type');
    expect((await m.get('/billing-policy')).json()).toEqual(good);
    const [row] = await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM billing_policies WHERE shop_id = $1', [m.shopId]);
    expect(row.n).toBe(1);
  });
});
