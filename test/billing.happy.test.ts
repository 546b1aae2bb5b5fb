import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, eventRows, insertContract, sql } from './support/fixtures.js';
import { BillingWorker } from '../src/workers/billing.js';

/**
 * Renewals in standalone mode (the test gateway): due contracts are billed once per cycle, the outcome arrives
 * through the gateway, the schedule moves on, missed cycles are recorded, bill_now bills at once. The clock stands
 * at 2026-11-22T10:00:00Z; the gateway's outcomes wait until the test runs them (t.billing.scheduler).
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const DAY = 86_400_000;
let t: TestApp;
let key: string;
let shopId: string;
let worker: BillingWorker;

beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
});
beforeEach(async () => {
  t.clock.set(NOW);
  // Each test bills only its own shop's contracts.
  ({ key, shopId } = await t.shopWithKey());
  worker = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 8, shopId });
});
afterAll(() => t.close());

const attempts = (contractId: string) =>
  sql<{ cycle_date: Date; attempt: number; trigger: string; status: string; amount: string; currency_code: string; order: unknown; error_code: string | null; submitted_at: Date | null; platform_reference: string | null }>(
    t,
    `SELECT cycle_date, attempt, trigger, status, amount::text AS amount, currency_code, "order", error_code, submitted_at, platform_reference
       FROM billing_attempts WHERE contract_id = $1 ORDER BY created_at, attempt`,
    [contractId],
  );
const get = async (id: string) => (await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json().contract;

describe('the billing worker and the test gateway', () => {
  it('bills a due contract once: an attempt pending, then the order; the schedule moves one interval from the cycle', async () => {
    const due = new Date(NOW.getTime() - 30_000);
    const c = await insertContract(t, shopId, {
      nextBillingDate: due,
      lines: [
        { title: 'Coffee 1kg', variantId: '51', quantity: 3, price: { amount: '19.99', currencyCode: 'EUR' } },
        { title: 'Filter', variantId: '52', quantity: 1, price: { amount: '0.10', currencyCode: 'EUR' } },
      ],
    });
    const later = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() + 5_000) });

    expect(await worker.tick()).toMatchObject({ attempted: 1, missed: 0, submitted: 1 });
    const [pending] = await attempts(c.id);
    expect(pending).toMatchObject({ attempt: 1, trigger: 'schedule', status: 'pending', amount: '60.07', currency_code: 'EUR' });
    expect(pending.cycle_date.toISOString()).toBe(due.toISOString());
    expect(pending.submitted_at).not.toBeNull();
    expect(pending.platform_reference).toMatch(/^test_svc-/);
    const during = await get(c.id);
    expect(during.billing).toMatchObject({ status: 'ok', failedAttempts: 0, nextAttemptAt: null, lastAttempt: { status: 'pending', contractId: c.id, amount: { amount: '60.07', currencyCode: 'EUR' } } });
    expect(during.nextBillingDate).toBe(due.toISOString());

    // Nothing more to bill while the outcome is on its way, whatever the worker does.
    expect(await worker.tick()).toMatchObject({ attempted: 0 });

    expect(await t.billing.scheduler.runAll()).toBe(1);
    const [paid] = await attempts(c.id);
    expect(paid).toMatchObject({ status: 'succeeded', order: { id: '1001', name: '#1001', amount: '60.07', currencyCode: 'EUR' } });
    const after = await get(c.id);
    expect(after.nextBillingDate).toBe('2026-12-22T09:59:30.000Z');
    expect(after.billing).toMatchObject({ status: 'ok', failedAttempts: 0, lastAttempt: { status: 'succeeded', order: { name: '#1001' } } });
    const events = await eventRows(t, c.id);
    expect(events.map((e) => [e.type, e.actorType])).toEqual([
      ['billing.attempted', 'billing'],
      ['billing.succeeded', 'billing'],
    ]);
    expect(events[1].data).toMatchObject({ attempt: { status: 'succeeded', order: { name: '#1001' } }, nextBillingDate: '2026-12-22T09:59:30.000Z' });

    // The second contract comes due: the shop's next order number.
    t.clock.advance(10_000);
    expect(await worker.tick()).toMatchObject({ attempted: 1 });
    await t.billing.scheduler.runAll();
    expect((await attempts(later.id))[0]).toMatchObject({ status: 'succeeded', order: { name: '#1002' } });
    expect(await worker.tick()).toMatchObject({ attempted: 0 });
    expect(await attempts(c.id)).toHaveLength(1);
  });

  it('never bills a PAUSED, CANCELLED, EXPIRED or FAILED contract, one not yet due, or a shop that uninstalled', async () => {
    const past = new Date(NOW.getTime() - 60_000);
    const ids = [];
    for (const status of ['PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'] as const) ids.push((await insertContract(t, shopId, { status, nextBillingDate: past })).id);
    ids.push((await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() + 1_000) })).id);
    expect(await worker.tick()).toMatchObject({ attempted: 0, missed: 0 });

    const gone = await t.shopWithKey();
    const theirs = await insertContract(t, gone.shopId, { nextBillingDate: past });
    await sql(t, `UPDATE shops SET uninstalled_at = $2 WHERE id = $1`, [gone.shopId, NOW]);
    const everywhere = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 8, shopId: gone.shopId });
    expect(await everywhere.tick()).toMatchObject({ attempted: 0 });
    for (const id of [...ids, theirs.id]) expect(await attempts(id)).toEqual([]);
  });

  it('a cycle more than BILLING_MAX_LATE late is recorded as billing.missed and the schedule moves past now; one less late is billed once', async () => {
    const late = await insertContract(t, shopId, { nextBillingDate: new Date('2026-11-18T09:00:00.000Z'), billingInterval: 'WEEK' });
    const monthly = await insertContract(t, shopId, { nextBillingDate: new Date('2026-10-20T12:00:00.000Z'), billingInterval: 'MONTH' });
    await insertContract(t, shopId, { nextBillingDate: new Date('2026-11-20T12:00:00.000Z') });
    expect(await worker.tick()).toMatchObject({ attempted: 1, missed: 2 });
    expect(await attempts(late.id)).toEqual([]);
    expect((await get(late.id)).nextBillingDate).toBe('2026-11-25T09:00:00.000Z');
    const [missed] = await eventRows(t, late.id);
    expect(missed).toMatchObject({ type: 'billing.missed', actorType: 'billing', data: { cycleDate: '2026-11-18T09:00:00.000Z', nextBillingDate: '2026-11-25T09:00:00.000Z' } });
    // Not billed once per missed interval either: the monthly one moves to its first date after now.
    expect((await get(monthly.id)).nextBillingDate).toBe('2026-12-20T12:00:00.000Z');
    expect(await worker.tick()).toMatchObject({ attempted: 0, missed: 0 });
  });
});

describe('bill_now', () => {
  const act = (id: string, body: object, headers: Record<string, string> = {}) =>
    t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...bearer(key), ...headers }, payload: body });

  it('bills the current cycle now and restarts the schedule from now; other actions wait for the outcome (409 billing_in_progress)', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date('2026-12-01T00:00:00.000Z') });
    const res = await act(c.id, { action: 'bill_now' }, { 'idempotency-key': `bill-${c.id}` });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['contract', 'billingAttempt']);
    expect(body.contract.nextBillingDate).toBe('2026-12-22T10:00:00.000Z');
    expect(body.billingAttempt).toMatchObject({ contractId: c.id, trigger: 'bill_now', status: 'pending', attempt: 1, cycleDate: NOW.toISOString(), amount: { amount: '48.00', currencyCode: 'EUR' } });
    expect(body.contract.billing.lastAttempt).toEqual(body.billingAttempt);

    // Replayed with the same key: the same answer, nothing billed again.
    const replay = await act(c.id, { action: 'bill_now' }, { 'idempotency-key': `bill-${c.id}` });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(body);
    expect(await attempts(c.id)).toHaveLength(1);

    const busy = await act(c.id, { action: 'pause' });
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.code).toBe('billing_in_progress');
    expect((await act(c.id, { action: 'bill_now' })).json().error.code).toBe('billing_in_progress');

    await t.billing.scheduler.runAll();
    const paid = await get(c.id);
    expect(paid.nextBillingDate).toBe('2026-12-22T10:00:00.000Z');
    expect(paid.billing.lastAttempt).toMatchObject({ status: 'succeeded', order: { amount: '48.00' } });
    expect((await act(c.id, { action: 'pause' })).statusCode).toBe(200);
    // The worker does not bill the cycle bill_now paid.
    expect(await worker.tick()).toMatchObject({ attempted: 0 });
  });
});
