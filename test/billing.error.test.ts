import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, eventRows, expectError, insertContract, sql } from './support/fixtures.js';
import { onPostgres } from './support/db.js';
import { BillingWorker } from '../src/workers/billing.js';
import { recordBillingOutcome } from '../src/services/recordBillingOutcome.js';
import { createServiceContext } from '../src/services/context.js';
import type { BillingGateway } from '../src/services/billingGateway.js';

/**
 * Renewals when payments fail (dunning and its final actions), when outcomes come twice, late or never, when the
 * gateway cannot be reached, when two workers bill one shop, and every refusal of the API.
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const DAY = 86_400_000;
let t: TestApp;
let key: string;
let domain: string;
let shopId: string;
let worker: BillingWorker;

beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(async () => {
  t.clock.set(NOW);
  ({ key, shopId, domain } = await t.shopWithKey());
  worker = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId });
});
afterAll(() => t.close());

const get = async (id: string) => (await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json().contract;
const attempts = (id: string) =>
  sql<{ id: string; attempt: number; trigger: string; status: string; error_code: string | null; cycle_date: Date }>(
    t,
    `SELECT id::text, attempt, trigger, status, error_code, cycle_date FROM billing_attempts WHERE contract_id = $1 ORDER BY created_at, attempt`,
    [id],
  );
const pay = (id: string, behaviour: string) => sql(t, `UPDATE subscription_contracts SET payment_behaviour = $2 WHERE id = $1`, [id, behaviour]);
/** One round of billing and its outcomes. */
async function round() {
  const done = await worker.tick();
  await t.billing.scheduler.runAll();
  return done;
}
async function setPolicy(policy: object) {
  const res = await t.inject({ method: 'PUT', url: '/admin/api/billing-policy', headers: { authorization: `Bearer ${await t.sessionToken(domain)}` }, payload: policy });
  expect(res.statusCode, res.body).toBe(200);
}

describe('dunning', () => {
  it('a failed payment is retried after 1, 3 and 7 days, then the contract FAILS; resume bills the cycle it failed on', async () => {
    const cycle = new Date(NOW.getTime() - 1_000);
    const c = await insertContract(t, shopId, { nextBillingDate: cycle });
    await pay(c.id, 'insufficient_funds');
    await round();
    let now = await get(c.id);
    expect(now.status).toBe('ACTIVE');
    expect(now.billing).toMatchObject({ status: 'retrying', failedAttempts: 1, nextAttemptAt: new Date(NOW.getTime() + DAY).toISOString(), lastAttempt: { status: 'failed', errorCode: 'insufficient_funds' } });

    // Not before its time.
    t.clock.advance(DAY - 1_000);
    expect((await round()).attempted).toBe(0);
    for (const [wait, n] of [[1_000, 2], [3 * DAY, 3]] as const) {
      t.clock.advance(wait);
      await round();
      now = await get(c.id);
      expect(now.billing).toMatchObject({ status: 'retrying', failedAttempts: n });
    }
    t.clock.advance(7 * DAY);
    await round();
    now = await get(c.id);
    expect(now.status).toBe('FAILED');
    expect(now.billing).toMatchObject({ failedAttempts: 4, nextAttemptAt: null });
    const all = await attempts(c.id);
    expect(all.map((a) => [a.attempt, a.trigger, a.status])).toEqual([
      [1, 'schedule', 'failed'],
      [2, 'retry', 'failed'],
      [3, 'retry', 'failed'],
      [4, 'retry', 'failed'],
    ]);
    expect(all.every((a) => a.cycle_date.getTime() === cycle.getTime())).toBe(true);
    const events = await eventRows(t, c.id);
    expect(events.slice(-2).map((e) => [e.type, e.actorType, e.fromStatus, e.toStatus])).toEqual([
      ['billing.failed', 'billing', 'ACTIVE', 'ACTIVE'],
      ['contract.failed', 'billing', 'ACTIVE', 'FAILED'],
    ]);
    expect((await round()).attempted).toBe(0);

    // The customer fixed the card; the merchant resumes: the failed cycle is billed now.
    await pay(c.id, 'succeeds');
    const resumed = await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'resume' } });
    expect(resumed.json().contract).toMatchObject({ status: 'ACTIVE', nextBillingDate: t.clock.now().toISOString(), billing: { status: 'ok', failedAttempts: 0 } });
    expect((await round()).attempted).toBe(1);
    now = await get(c.id);
    expect(now.billing.lastAttempt).toMatchObject({ status: 'succeeded', trigger: 'schedule' });
    // Resumed on 2026-12-03 at 10:00 and paid then: the schedule restarts from the payment.
    expect(now.nextBillingDate).toBe('2027-01-03T10:00:00.000Z');
  });

  it('out of stock: retried daily up to inventoryRetries.max, then the cycle is skipped (contract.skipped, actor billing)', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date('2026-11-22T09:00:00.000Z') });
    await pay(c.id, 'out_of_stock');
    await round();
    for (let i = 0; i < 5; i++) {
      t.clock.advance(DAY);
      await round();
    }
    const now = await get(c.id);
    expect(now).toMatchObject({ status: 'ACTIVE', nextBillingDate: '2026-12-22T09:00:00.000Z', billing: { status: 'ok', failedAttempts: 0, nextAttemptAt: null } });
    expect((await attempts(c.id)).map((a) => a.error_code)).toEqual(Array(6).fill('out_of_stock'));
    const last = (await eventRows(t, c.id)).slice(-2);
    expect(last.map((e) => [e.type, e.actorType])).toEqual([
      ['billing.failed', 'billing'],
      ['contract.skipped', 'billing'],
    ]);
    expect(last[0].data).toMatchObject({ finalAction: 'skip', nextAttemptAt: null });
  });

  it('a hard decline (expired card) gets one more attempt at most, then the final action', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await pay(c.id, 'expired_card');
    await round();
    expect((await get(c.id)).billing).toMatchObject({ status: 'retrying', failedAttempts: 1 });
    t.clock.advance(DAY);
    await round();
    expect((await get(c.id)).status).toBe('FAILED');
    expect(await attempts(c.id)).toHaveLength(2);
  });

  it('the shop\'s final action: pause, cancel or skip instead of fail; its own retry waits', async () => {
    await setPolicy({ paymentRetries: ['PT1H'], inventoryRetries: { every: 'P1D', max: 0 }, finalAction: 'pause' });
    const p = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await pay(p.id, 'card_declined');
    await round();
    expect((await get(p.id)).billing.nextAttemptAt).toBe('2026-11-22T11:00:00.000Z');
    t.clock.advance(3_600_000);
    await round();
    expect(await get(p.id)).toMatchObject({ status: 'PAUSED', resumeAt: null, billing: { status: 'ok', failedAttempts: 0 } });

    await setPolicy({ paymentRetries: [], inventoryRetries: { every: 'P1D', max: 0 }, finalAction: 'cancel' });
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(t.clock.now().getTime() - 1_000) });
    await pay(c.id, 'card_declined');
    await round();
    expect(await get(c.id)).toMatchObject({ status: 'CANCELLED', cancellationReason: expect.stringContaining('Payment failed') });

    await setPolicy({ paymentRetries: [], inventoryRetries: { every: 'P1D', max: 0 }, finalAction: 'skip' });
    const s = await insertContract(t, shopId, { nextBillingDate: new Date('2026-11-22T10:30:00.000Z'), billingInterval: 'WEEK' });
    await pay(s.id, 'insufficient_funds');
    await round();
    expect(await get(s.id)).toMatchObject({ status: 'ACTIVE', nextBillingDate: '2026-11-29T10:30:00.000Z' });
  });

  it('action required: the customer must authenticate; a retry is scheduled, and a later success of that attempt counts', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await pay(c.id, 'requires_action');
    await round();
    const now = await get(c.id);
    expect(now.billing).toMatchObject({ status: 'action_required', failedAttempts: 1, lastAttempt: { status: 'action_required', nextActionUrl: expect.stringMatching(/^https:\/\//) } });
    // While the customer is away, the merchant may act on the contract.
    expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'reschedule', nextBillingDate: '2026-11-30T00:00:00Z' } })).statusCode).toBe(200);
    // The customer came back and authenticated.
    const r = await recordBillingOutcome(t.ctx, { shopId, attemptId: now.billing.lastAttempt.id, outcome: { kind: 'succeeded', order: { id: '77', name: '#77', amount: '48.00', currencyCode: 'EUR' } } });
    expect(r.changed).toBe(true);
    expect(await get(c.id)).toMatchObject({ nextBillingDate: '2026-11-30T00:00:00.000Z', billing: { status: 'ok', lastAttempt: { status: 'succeeded' } } });
  });
});

describe('outcomes late, twice, unknown; a gateway down; two workers', () => {
  it('a second delivery of an outcome, or one of an older attempt, changes nothing; an unknown attempt is not_found', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await round();
    const [a] = await attempts(c.id);
    const before = await eventRows(t, c.id);
    const again = await recordBillingOutcome(t.ctx, { shopId, attemptId: a.id, outcome: { kind: 'failed', errorCode: 'card_declined', platformErrorCode: null, message: null } });
    expect(again.changed).toBe(false);
    expect(await eventRows(t, c.id)).toEqual(before);
    expect((await attempts(c.id))[0].status).toBe('succeeded');
    await expect(recordBillingOutcome(t.ctx, { shopId, attemptId: '00000000-0000-4000-8000-000000000000', outcome: { kind: 'action_required', nextActionUrl: null } })).rejects.toMatchObject({ code: 'not_found' });
    const other = await t.shopWithKey();
    await expect(recordBillingOutcome(t.ctx, { shopId: other.shopId, attemptId: a.id, outcome: { kind: 'action_required', nextActionUrl: null } })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a gateway that cannot be reached leaves the attempt pending; the worker hands it over again with the same key, billed once', async () => {
    const calls: string[] = [];
    let down = true;
    const flaky: BillingGateway = {
      async createAttempt(req) {
        calls.push(req.idempotencyKey);
        if (down) throw new Error('connection refused');
        return t.billing.gateway.createAttempt(req);
      },
    };
    const ctx = createServiceContext({ db: t.ctx.db, clock: t.clock, freeUntil: null });
    ctx.billing = { gateway: flaky, maxLateMs: 3 * DAY };
    const w = new BillingWorker(ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId });
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    expect(await w.tick()).toMatchObject({ attempted: 1, submitted: 0 });
    expect(w.stats.submitFailures).toBe(1);
    down = false;
    expect(await w.tick()).toMatchObject({ attempted: 0, submitted: 0 });
    t.clock.advance(31_000);
    expect(await w.tick()).toMatchObject({ attempted: 0, submitted: 1 });
    await t.billing.scheduler.runAll();
    expect(calls).toHaveLength(2);
    expect(calls[0]).toBe(calls[1]);
    expect((await attempts(c.id)).map((a) => a.status)).toEqual(['succeeded']);
  });

  it('two workers (two instances) billing the same shop at once bill each cycle once', async () => {
    const ids = [];
    for (let i = 0; i < 12; i++) ids.push((await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000 - i) })).id);
    const other = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId, batchSize: 5 });
    const mine = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId, batchSize: 5 });
    const [x, y] = await Promise.all([mine.tick(), other.tick()]);
    expect(x.attempted + y.attempted).toBe(12);
    await t.billing.scheduler.runAll();
    for (const id of ids) expect((await attempts(id)).map((a) => a.status), id).toEqual(['succeeded']);
  });

  it.runIf(onPostgres())('a due contract whose row another writer holds is left to the next round; the others are billed meanwhile', async () => {
    const held = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 2_000) });
    const free = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    // Another writer (an action under the lock, say) holds the row while the worker's round runs.
    const holder = t.ctx.db.transaction(async (run) => {
      await run('SELECT id FROM subscription_contracts WHERE id = $1 FOR UPDATE', [held.id]);
      locked();
      await new Promise<void>((r) => (release = r));
    });
    await isLocked;
    expect((await worker.tick()).attempted).toBe(1);
    expect(await attempts(held.id)).toEqual([]);
    expect(await attempts(free.id)).toHaveLength(1);
    release();
    await holder;
    expect((await worker.tick()).attempted).toBe(1);
    await t.billing.scheduler.runAll();
    for (const c of [held, free]) expect((await attempts(c.id)).map((a) => a.status)).toEqual(['succeeded']);
  });

  it('a round ends even when a due contract turns out to have nothing to bill, and bills the others', async () => {
    // Inconsistent on purpose: a retry time with no cycle, on a schedule far too late. The database counts it as due;
    // planning bills nothing (with no cycle it is no retry, and its scheduled cycle is too late: a missed cycle).
    const stuck = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 30 * DAY) });
    await sql(t, `UPDATE subscription_contracts SET billing_next_attempt_at = $2 WHERE id = $1`, [stuck.id, new Date(NOW.getTime() - 29 * DAY)]);
    const other = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    // One contract per batch: without a memory of what a round left due, it would take the same one for ever.
    const w = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId, batchSize: 1 });
    expect((await w.tick()).attempted).toBe(1);
    expect(await attempts(stuck.id)).toEqual([]);
    expect(await attempts(other.id)).toHaveLength(1);
  });

  it('a batch of due contracts is billed at once; a contract whose write the database refuses is logged, and the others are billed', async () => {
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push((await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000 - i) })).id);
    // A damaged row: totals without an amount, so its attempt (amount NOT NULL) cannot be inserted and the batch's
    // one statement fails; the worker then bills the batch contract by contract.
    await sql(t, `UPDATE subscription_contracts SET totals = '{}' WHERE id = $1`, [ids[3]]);
    const errors: string[] = [];
    const w = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 4, shopId, log: { info() {}, error: (o: { contractId?: string }) => errors.push(o.contractId ?? '') } as never });
    expect((await w.tick()).attempted).toBe(6);
    expect(errors).toContain(ids[3]);
    await t.billing.scheduler.runAll();
    for (const id of ids) expect((await attempts(id)).length, id).toBe(id === ids[3] ? 0 : 1);
  });

  it('an action committed before the attempt is created wins: the worker\'s stale read bills nothing', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    const { claimDueContracts } = await import('../src/db/billingRows.js');
    const { changeContract } = await import('../src/services/changeContract.js');
    const [row] = await claimDueContracts(t.ctx.db, { now: NOW, until: new Date(NOW.getTime() + 60_000), limit: 10, shopId });
    expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'skip' } })).statusCode).toBe(200);
    const done = await changeContract(t.ctx, { shopId, contractId: c.id, read: row, request: { command: { name: 'bill', input: { attemptId: '00000000-0000-4000-8000-000000000001', maxLateMs: 3 * DAY } }, actor: { type: 'billing' } } });
    expect(done?.changed).toBe(false);
    expect(await attempts(c.id)).toEqual([]);
  });
});

describe('refusals', () => {
  const act = (id: string, body: object, k = key) => t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(k), payload: body });

  it('bill_now: only from ACTIVE (409 invalid_state), with a read-write key (403), no fields (400), not another shop\'s (404)', async () => {
    const paused = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW });
    const e = expectError(await act(paused.id, { action: 'bill_now' }), 409, 'invalid_state');
    expect(e.message).toContain('PAUSED');
    const c = await insertContract(t, shopId);
    expectError(await act(c.id, { action: 'bill_now', amount: '1.00' }), 400, 'invalid_request');
    const ro = await t.shopWithKey('enterprise', { access: 'read_only' });
    expectError(await act((await insertContract(t, ro.shopId)).id, { action: 'bill_now' }, ro.key), 403, 'insufficient_scope');
    const other = await t.shopWithKey();
    expectError(await act(c.id, { action: 'bill_now' }, other.key), 404, 'not_found');
    expect(await attempts(c.id)).toEqual([]);
  });

  it('while an attempt is pending every action and edit is 409 billing_in_progress, and nothing changes', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await worker.tick();
    for (const body of [{ action: 'pause' }, { action: 'skip' }, { action: 'cancel' }, { action: 'reschedule', nextBillingDate: '2027-01-01T00:00:00Z' }, { action: 'bill_now' }]) {
      expectError(await act(c.id, body), 409, 'billing_in_progress');
    }
    const edit = await t.inject({ method: 'POST', url: `${API}/${c.id}/edits`, headers: bearer(key), payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 1 }] } });
    expectError(edit, 409, 'billing_in_progress');
    expect((await eventRows(t, c.id)).map((e) => e.type)).toEqual(['billing.attempted']);
    await t.billing.scheduler.runAll();
    expect((await act(c.id, { action: 'pause' })).statusCode).toBe(200);
  });

  it('a bad policy is 400 invalid_request naming the field, and the policy stays', async () => {
    const admin = { authorization: `Bearer ${await t.sessionToken(domain)}` };
    const put = (payload: unknown) => t.inject({ method: 'PUT', url: '/admin/api/billing-policy', headers: admin, payload: payload as object });
    const base = { paymentRetries: ['P1D'], inventoryRetries: { every: 'P1D', max: 5 }, finalAction: 'fail' };
    const cases: [unknown, string][] = [
      [{ ...base, paymentRetries: ['PT0S'] }, 'paymentRetries.0'],
      [{ ...base, paymentRetries: ['P31D'] }, 'paymentRetries.0'],
      [{ ...base, paymentRetries: ['P1M'] }, 'paymentRetries.0'],
      [{ ...base, paymentRetries: ['1 day'] }, 'paymentRetries.0'],
      [{ ...base, paymentRetries: Array(11).fill('P1D') }, 'paymentRetries'],
      [{ ...base, inventoryRetries: { every: 'P1D', max: 11 } }, 'inventoryRetries.max'],
      [{ ...base, inventoryRetries: { every: 'PT0.5S', max: 1 } }, 'inventoryRetries.every'],
      [{ ...base, finalAction: 'refund' }, 'finalAction'],
      [{ ...base, grace: 'P1D' }, 'grace'],
      [{ paymentRetries: ['P1D'] }, 'inventoryRetries'],
    ];
    for (const [payload, field] of cases) {
      const e = expectError(await put(payload), 400, 'invalid_request');
      expect(e.details?.map((d) => d.path), JSON.stringify(payload)).toContain(field);
    }
    expectError(await put([base]), 400, 'invalid_request');
    expect((await t.inject({ url: '/api/v1/billing-policy', headers: bearer(key) })).json().paymentRetries).toEqual(['P1D', 'P3D', 'P7D']);
  });

  it('bad queries are 400 invalid_request; another shop\'s contract is 404', async () => {
    const c = await insertContract(t, shopId);
    for (const url of [
      `${API}/${c.id}/upcoming?count=0`,
      `${API}/${c.id}/upcoming?count=25`,
      `${API}/${c.id}/upcoming?count=two`,
      '/api/v1/billing-attempts?status=done',
      '/api/v1/billing-attempts?since=2026-11-22',
      '/api/v1/billing-attempts?cursor=nope',
      `${API}/${c.id}/billing-attempts?limit=101`,
      `${API}/abc/billing-attempts`,
    ]) {
      expectError(await t.inject({ url, headers: bearer(key) }), 400, 'invalid_request');
    }
    const other = await t.shopWithKey();
    expectError(await t.inject({ url: `${API}/${c.id}/billing-attempts`, headers: bearer(other.key) }), 404, 'not_found');
    expectError(await t.inject({ url: `${API}/${c.id}/upcoming`, headers: bearer(other.key) }), 404, 'not_found');
  });
});
