import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, expectError, insertContract, sql } from './support/fixtures.js';
import { listen, mcpClient, toolError, toolOk } from './support/mcp.js';
import { BillingWorker } from '../src/workers/billing.js';

/**
 * Payment trouble, as clients and the merchant see it (docs/renewals.md): billing.status says whether a cycle is
 * owed, so a contract in dunning and one that dunning failed both say so (and a resume of the failed one bills at
 * once); the contract list filters by it; and a retried bill_now never charges twice (409 recently_billed within
 * 24 hours of a bill_now that succeeded, unless the body says "again": true).
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let t: TestApp;
let key: string;
let shopId: string;
let domain: string;
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
const act = (id: string, body: object, k = key) => t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(k), payload: body });
const pay = (id: string, behaviour: string) => sql(t, `UPDATE subscription_contracts SET payment_behaviour = $2 WHERE id = $1`, [id, behaviour]);
const attempts = (id: string) =>
  sql<{ trigger: string; status: string; order: { name: string } | null }>(t, `SELECT trigger, status, "order" FROM billing_attempts WHERE contract_id = $1 ORDER BY created_at, attempt`, [id]);
/** One round of billing and its outcomes. */
async function round() {
  const done = await worker.tick();
  await t.billing.scheduler.runAll();
  return done;
}
const detail = async (id: string) => (await t.inject({ url: `/admin/api/contracts/${id}`, headers: await adminAuth(t, domain) })).json();

/** A contract whose payments fail until dunning (1, 3 and 7 days) gives up: FAILED 11 days after its cycle. */
async function failedContract(behaviour = 'insufficient_funds') {
  const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
  await pay(c.id, behaviour);
  await round();
  for (const wait of [1, 3, 7]) {
    t.clock.advance(wait * DAY);
    await round();
  }
  return c;
}

describe('billing.status: whether a cycle is owed', () => {
  it('in dunning: retrying with the next retry; FAILED after the last: still retrying, no retry scheduled, never ok', async () => {
    const hook = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/failed', events: ['contract.failed'] } });
    expect(hook.statusCode, hook.body).toBe(201);
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await pay(c.id, 'card_declined');
    await round();
    expect(await get(c.id)).toMatchObject({ status: 'ACTIVE', billing: { status: 'retrying', failedAttempts: 1, nextAttemptAt: new Date(NOW.getTime() + DAY).toISOString() } });

    for (const wait of [1, 3, 7]) {
      t.clock.advance(wait * DAY);
      await round();
    }
    const failed = await get(c.id);
    expect(failed).toMatchObject({ status: 'FAILED', billing: { status: 'retrying', failedAttempts: 4, nextAttemptAt: null, lastAttempt: { status: 'failed', errorCode: 'card_declined' } } });
    // The webhook of contract.failed carries the same.
    const sent = await sql<{ contract: { status: string; billing: { status: string; nextAttemptAt: string | null } } }>(
      t,
      `SELECT contract FROM webhook_deliveries WHERE contract_id = $1 AND type = 'contract.failed'`,
      [c.id],
    );
    expect(sent.map((d) => d.contract)).toMatchObject([{ status: 'FAILED', billing: { status: 'retrying', nextAttemptAt: null } }]);
  });

  it('a customer who never authenticated: action_required in dunning and once FAILED', async () => {
    const c = await failedContract('requires_action');
    expect(await get(c.id)).toMatchObject({ status: 'FAILED', billing: { status: 'action_required', failedAttempts: 4, nextAttemptAt: null } });
  });

  it('resuming a FAILED contract bills its unpaid cycle at once, whatever its next billing date; the schedule restarts from the payment', async () => {
    const c = await failedContract();
    // The next billing date stands months ahead (a bill_now, say, moved it): resuming still bills now.
    await sql(t, `UPDATE subscription_contracts SET next_billing_date = $2 WHERE id = $1`, [c.id, new Date('2027-04-01T00:00:00.000Z')]);
    const resumedAt = t.clock.now();
    expect((await detail(c.id)).resume).toEqual({ billsNow: true, nextBillingDate: resumedAt.toISOString() });

    await pay(c.id, 'succeeds');
    const res = await act(c.id, { action: 'resume' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().contract).toMatchObject({ status: 'ACTIVE', nextBillingDate: resumedAt.toISOString(), billing: { status: 'ok', failedAttempts: 0 } });
    expect(await round()).toMatchObject({ attempted: 1 });
    const paid = await get(c.id);
    expect(paid.billing.lastAttempt).toMatchObject({ status: 'succeeded', cycleDate: resumedAt.toISOString() });
    expect(paid.nextBillingDate).toBe(new Date(Date.UTC(2027, 0, 3, 10)).toISOString());
  });

  it('a FAILED contract that owes nothing (failed on the platform) is billed on its next date after now, not at once', async () => {
    const c = await insertContract(t, shopId, { status: 'FAILED', nextBillingDate: new Date('2026-11-01T08:00:00.000Z') });
    expect((await get(c.id)).billing.status).toBe('ok');
    expect((await detail(c.id)).resume).toEqual({ billsNow: false, nextBillingDate: '2026-12-01T08:00:00.000Z' });
    const res = await act(c.id, { action: 'resume' });
    expect(res.json().contract).toMatchObject({ status: 'ACTIVE', nextBillingDate: '2026-12-01T08:00:00.000Z' });
    expect(await round()).toMatchObject({ attempted: 0 });
    // A paused contract: the same, and the admin says so.
    const p = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW, nextBillingDate: new Date('2026-12-05T00:00:00.000Z') });
    expect((await detail(p.id)).resume).toEqual({ billsNow: false, nextBillingDate: '2026-12-05T00:00:00.000Z' });
    expect((await detail((await insertContract(t, shopId)).id)).resume).toBeNull();
  });

  it('migration 0052 gives FAILED contracts left "ok" with an unpaid cycle the status they owe', async () => {
    const failedAttempt = (status: string) => ({
      id: '00000000-0000-4000-8000-000000000001', cycleDate: NOW.toISOString(), attempt: 4, trigger: 'retry', status, errorCode: status === 'failed' ? 'card_declined' : null,
      platformErrorCode: null, errorMessage: null, nextActionUrl: null, order: null, amount: { amount: '48.00', currencyCode: 'EUR' }, createdAt: NOW.toISOString(), completedAt: NOW.toISOString(),
    });
    const old = async (status: 'ACTIVE' | 'FAILED', last: string | null, cycle = true) => {
      const c = await insertContract(t, shopId, { status, billingStatus: 'ok', billingFailedAttempts: 4, billingCycleDate: cycle ? NOW : null, billingLastAttempt: last ? (failedAttempt(last) as never) : null });
      return c.id;
    };
    const declined = await old('FAILED', 'failed');
    const unconfirmed = await old('FAILED', 'action_required');
    const paidSince = await old('FAILED', 'succeeded', false);
    const active = await old('ACTIVE', null, false);
    const [update] = readFileSync(new URL('../src/db/migrations/0052_failed_contracts_owe_their_cycle.sql', import.meta.url), 'utf8')
      .split(/;\s*\n/)
      .filter((s) => /UPDATE/.test(s));
    await sql(t, update);
    expect((await get(declined)).billing.status).toBe('retrying');
    expect((await get(unconfirmed)).billing.status).toBe('action_required');
    expect((await get(paidSince)).billing.status).toBe('ok');
    expect((await get(active)).billing.status).toBe('ok');
  });
});

describe('the list\'s billingStatus filter', () => {
  it('API and admin: payment trouble is the contracts in dunning and the FAILED ones that owe a cycle', async () => {
    const failed = await failedContract();
    const now = t.clock.now().getTime();
    const fine = await insertContract(t, shopId, { nextBillingDate: new Date(now + DAY) });
    const failedOnPlatform = await insertContract(t, shopId, { status: 'FAILED' });
    const dunning = await insertContract(t, shopId, { nextBillingDate: new Date(now - 1_000) });
    await pay(dunning.id, 'insufficient_funds');
    const unconfirmed = await insertContract(t, shopId, { nextBillingDate: new Date(now - 1_000) });
    await pay(unconfirmed.id, 'requires_action');
    await round();
    const ids = (res: { json(): { contracts: { id: string }[] } }) => res.json().contracts.map((c) => c.id).sort();

    const trouble = await t.inject({ url: `${API}?billingStatus=retrying&billingStatus=action_required`, headers: bearer(key) });
    expect(trouble.statusCode, trouble.body).toBe(200);
    const troubled = trouble.json().contracts as { id: string; status: string; billing: { status: string } }[];
    expect(troubled.map((c) => c.id).sort()).toEqual([dunning.id, unconfirmed.id, failed.id].sort());
    expect(troubled.find((c) => c.id === failed.id)).toMatchObject({ status: 'FAILED', billing: { status: 'retrying' } });
    expect(ids(await t.inject({ url: `${API}?billingStatus=action_required`, headers: bearer(key) }))).toEqual([unconfirmed.id]);
    expect(ids(await t.inject({ url: `${API}?billingStatus=ok`, headers: bearer(key) }))).toEqual([fine.id, failedOnPlatform.id].sort());
    // With the other filters, ANDed.
    expect(ids(await t.inject({ url: `${API}?billingStatus=retrying&status=FAILED`, headers: bearer(key) }))).toEqual([failed.id]);
    expectError(await t.inject({ url: `${API}?billingStatus=failed`, headers: bearer(key) }), 400, 'invalid_request');

    // The admin's list takes the same.
    const admin = await adminAuth(t, domain);
    const page = await t.inject({ url: `/admin/api/contracts?billingStatus=retrying&billingStatus=action_required`, headers: admin });
    expect(page.statusCode, page.body).toBe(200);
    expect(ids(page)).toEqual([dunning.id, unconfirmed.id, failed.id].sort());
    expect(ids(await t.inject({ url: `/admin/api/contracts?billingStatus=retrying&status=ACTIVE`, headers: admin }))).toEqual([dunning.id]);
    expectError(await t.inject({ url: `/admin/api/contracts?billingStatus=late`, headers: admin }), 400, 'invalid_request');

    // Another shop's trouble is not this shop's.
    const other = await t.shopWithKey();
    expect((await t.inject({ url: `${API}?billingStatus=retrying`, headers: bearer(other.key) })).json().contracts).toEqual([]);
  });

  it('a bulk job\'s filter takes it too', async () => {
    const dunning = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await pay(dunning.id, 'insufficient_funds');
    await round();
    await insertContract(t, shopId);
    const res = await t.inject({ method: 'POST', url: '/api/v1/bulk-jobs', headers: bearer(key), payload: { selector: { filter: { billingStatus: ['retrying'] } }, change: { action: 'skip' }, preview: true } });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().bulkJob.counts.matched).toBe(1);
  });
});

describe('bill_now: a retried request never charges twice', () => {
  it('within 24 hours of a bill_now that succeeded: 409 recently_billed saying when; with "again": true a second charge', async () => {
    const c = await insertContract(t, shopId);
    expect((await act(c.id, { action: 'bill_now' })).statusCode).toBe(200);
    await t.billing.scheduler.runAll();
    const billedAt = t.clock.now().toISOString();

    t.clock.advance(23 * HOUR);
    const again = expectError(await act(c.id, { action: 'bill_now' }), 409, 'recently_billed');
    expect(again.message).toContain(billedAt);
    expect(again.message).toContain('#1001');
    expect(again.message).toContain('"again": true');
    expect(again.details).toBeUndefined();
    expect(await attempts(c.id)).toHaveLength(1);
    // Nothing changed meanwhile.
    expect((await get(c.id)).billing.lastAttempt).toMatchObject({ trigger: 'bill_now', status: 'succeeded' });

    const second = await act(c.id, { action: 'bill_now', again: true });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().billingAttempt).toMatchObject({ trigger: 'bill_now', status: 'pending' });
    await t.billing.scheduler.runAll();
    // The test gateway charged twice: two orders.
    expect((await attempts(c.id)).map((a) => [a.trigger, a.status, a.order?.name])).toEqual([
      ['bill_now', 'succeeded', '#1001'],
      ['bill_now', 'succeeded', '#1002'],
    ]);
    // The window restarts from the second: refused again, and "again": false is no "again".
    expectError(await act(c.id, { action: 'bill_now', again: false }), 409, 'recently_billed');
    // 24 hours after it, allowed without "again".
    t.clock.advance(DAY);
    expect((await act(c.id, { action: 'bill_now' })).statusCode).toBe(200);
  });

  it('not refused after a bill_now whose payment failed, nor after a scheduled renewal; refused after an earlier success even when a later one failed', async () => {
    const c = await insertContract(t, shopId);
    await pay(c.id, 'card_declined');
    expect((await act(c.id, { action: 'bill_now' })).statusCode).toBe(200);
    await t.billing.scheduler.runAll();
    await pay(c.id, 'succeeds');
    t.clock.advance(HOUR);
    const retried = await act(c.id, { action: 'bill_now' });
    expect(retried.statusCode, retried.body).toBe(200);
    await t.billing.scheduler.runAll();
    expect((await attempts(c.id)).map((a) => a.status)).toEqual(['failed', 'succeeded']);

    // A second charge on purpose fails; the success before it still counts.
    await pay(c.id, 'card_declined');
    t.clock.advance(HOUR);
    expect((await act(c.id, { action: 'bill_now', again: true })).statusCode).toBe(200);
    await t.billing.scheduler.runAll();
    expectError(await act(c.id, { action: 'bill_now' }), 409, 'recently_billed');

    // A scheduled renewal is not a bill_now.
    const s = await insertContract(t, shopId, { nextBillingDate: new Date(t.clock.now().getTime() - 1_000) });
    await round();
    expect((await get(s.id)).billing.lastAttempt).toMatchObject({ trigger: 'schedule', status: 'succeeded' });
    expect((await act(s.id, { action: 'bill_now' })).statusCode).toBe(200);
  });

  it('the body is still checked: again must be a boolean', async () => {
    const c = await insertContract(t, shopId);
    const e = expectError(await act(c.id, { action: 'bill_now', again: 'yes' }), 400, 'invalid_request');
    expect(e.details?.[0].path).toBe('again');
  });

  it('MCP: bill_now takes again; the second call is refused with recently_billed, and charges with again: true', async () => {
    const base = await listen(t);
    const client = await mcpClient(base, key);
    try {
      const tool = (await client.listTools()).tools.find((x) => x.name === 'bill_now')!;
      expect(tool.inputSchema.properties).toHaveProperty('again');
      expect((tool.inputSchema.properties as Record<string, { type: string }>).again.type).toBe('boolean');
      expect(tool.description).toContain('recently_billed');
      const c = await insertContract(t, shopId);
      toolOk(await client.callTool({ name: 'bill_now', arguments: { contractId: c.id } }));
      await t.billing.scheduler.runAll();
      const refused = toolError(await client.callTool({ name: 'bill_now', arguments: { contractId: c.id } }));
      expect(refused.code).toBe('recently_billed');
      expect(refused.message).toContain(NOW.toISOString());
      t.clock.advance(60_000);
      const billed = toolOk(await client.callTool({ name: 'bill_now', arguments: { contractId: c.id, again: true } }));
      expect(billed.billingAttempt).toMatchObject({ trigger: 'bill_now', status: 'pending' });
      await t.billing.scheduler.runAll();
      expect((await attempts(c.id)).map((a) => a.order?.name)).toEqual(['#1001', '#1002']);
    } finally {
      await client.close();
    }
  });

  it('the admin: the contract says when it last billed; its bill_now is refused the same way and takes again', async () => {
    const c = await insertContract(t, shopId);
    expect((await detail(c.id)).lastBilled).toBeNull();
    const admin = await adminAuth(t, domain);
    const adminAct = (body: object) => t.inject({ method: 'POST', url: `/admin/api/contracts/${c.id}/actions`, headers: admin, payload: body });
    expect((await adminAct({ action: 'bill_now' })).statusCode).toBe(200);
    await t.billing.scheduler.runAll();
    expect((await detail(c.id)).lastBilled).toEqual({ at: NOW.toISOString(), trigger: 'bill_now', orderName: '#1001' });
    expectError(await adminAct({ action: 'bill_now' }), 409, 'recently_billed');
    t.clock.advance(60_000);
    expect((await adminAct({ action: 'bill_now', again: true })).statusCode).toBe(200);
  });
});
