import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, eventRows, insertContract, sql } from './support/fixtures.js';
import { BillingWorker } from '../src/workers/billing.js';
import type { BillingGateway } from '../src/services/billingGateway.js';
import { listen, mcpClient, toolError, toolOk } from './support/mcp.js';

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

describe('a storm of renewals', () => {
  it('a round that finds more due than one batch is catching up until it ends (its webhooks give way meanwhile); a round of one batch is not', async () => {
    const due = new Date(NOW.getTime() - 30_000);
    for (let i = 0; i < 5; i++) await insertContract(t, shopId, { nextBillingDate: due });
    const gateway = t.ctx.billing!.gateway;
    const seen: boolean[] = [];
    // What the worker says while each attempt is handed over.
    let storm: BillingWorker | null = null;
    const createAttempt: BillingGateway['createAttempt'] = (req) => {
      seen.push(storm!.catchingUp);
      return gateway.createAttempt(req);
    };
    const watched = { ...t.ctx, billing: { ...t.ctx.billing!, gateway: { outcomeWithinMs: gateway.outcomeWithinMs, createAttempt } } };
    storm = new BillingWorker(watched, { intervalMs: 1000, maxLateMs: 3 * DAY, concurrency: 8, batchSize: 2, shopId });
    expect(await storm.tick()).toMatchObject({ attempted: 5, submitted: 5 });
    expect(seen).toEqual([true, true, true, true, true]);
    expect(storm.catchingUp).toBe(false);

    await insertContract(t, shopId, { nextBillingDate: due });
    expect(await storm.tick()).toMatchObject({ attempted: 1 });
    expect(seen.slice(5)).toEqual([false]);
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

describe('reading renewals: attempts, upcoming renewals, the policy', () => {
  it('lists a contract\'s attempts and the shop\'s (by status, since, paged), newest first, as the contract shows its latest', async () => {
    const a = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    const b = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await sql(t, `UPDATE subscription_contracts SET payment_behaviour = 'card_declined' WHERE id = $1`, [b.id]);
    await worker.tick();
    await t.billing.scheduler.runAll();

    const mine = (await t.inject({ url: `${API}/${a.id}/billing-attempts`, headers: bearer(key) })).json();
    expect(mine.nextCursor).toBeNull();
    expect(mine.billingAttempts).toEqual([(await get(a.id)).billing.lastAttempt]);
    expect(mine.billingAttempts[0]).toMatchObject({ contractId: a.id, status: 'succeeded', errorCode: null, completedAt: NOW.toISOString() });

    const failed = (await t.inject({ url: `/api/v1/billing-attempts?status=failed`, headers: bearer(key) })).json();
    expect(failed.billingAttempts).toHaveLength(1);
    expect(failed.billingAttempts[0]).toMatchObject({ contractId: b.id, status: 'failed', errorCode: 'card_declined', platformErrorCode: 'card_declined', errorMessage: expect.stringContaining('declined'), order: null });

    const first = (await t.inject({ url: `/api/v1/billing-attempts?limit=1`, headers: bearer(key) })).json();
    const second = (await t.inject({ url: `/api/v1/billing-attempts?limit=1&cursor=${first.nextCursor}`, headers: bearer(key) })).json();
    expect(second.nextCursor).toBeNull();
    expect([first.billingAttempts[0].contractId, second.billingAttempts[0].contractId].sort()).toEqual([a.id, b.id].sort());
    const later = (await t.inject({ url: `/api/v1/billing-attempts?since=2026-11-22T10:00:00.001Z`, headers: bearer(key) })).json();
    expect(later.billingAttempts).toEqual([]);

    // Another shop sees none of them.
    const other = await t.shopWithKey();
    expect((await t.inject({ url: `/api/v1/billing-attempts`, headers: bearer(other.key) })).json().billingAttempts).toEqual([]);
  });

  it('upcoming renewals: from the next billing date, from the resume date when paused until then, none when paused until resumed', async () => {
    const c = await insertContract(t, shopId, { nextBillingDate: new Date('2026-01-31T08:00:00.000Z'), status: 'PAUSED', pausedAt: NOW, resumeAt: new Date('2027-03-15T00:00:00.000Z') });
    const res = await t.inject({ url: `${API}/${c.id}/upcoming?count=3`, headers: bearer(key) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().upcoming.map((u: { date: string }) => u.date)).toEqual(['2027-03-31T08:00:00.000Z', '2027-04-30T08:00:00.000Z', '2027-05-31T08:00:00.000Z']);
    expect(res.json().upcoming[0]).toMatchObject({ skipped: false, total: { amount: '48.00', currencyCode: 'EUR' }, lines: [{ title: 'Coffee 1kg', quantity: 2 }] });

    const active = await insertContract(t, shopId, { nextBillingDate: new Date('2026-12-01T00:00:00.000Z') });
    const six = (await t.inject({ url: `${API}/${active.id}/upcoming`, headers: bearer(key) })).json().upcoming;
    expect(six.map((u: { date: string }) => u.date.slice(0, 10))).toEqual(['2026-12-01', '2027-01-01', '2027-02-01', '2027-03-01', '2027-04-01', '2027-05-01']);

    const held = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW });
    expect((await t.inject({ url: `${API}/${held.id}/upcoming`, headers: bearer(key) })).json()).toEqual({ upcoming: [] });
  });

  it('the policy: the default, replaced in the admin (Settings → Billing), read by integrators', async () => {
    const s = await t.shopWithKey();
    const policy = (await t.inject({ url: '/api/v1/billing-policy', headers: bearer(s.key) })).json();
    expect(policy).toEqual({ paymentRetries: ['P1D', 'P3D', 'P7D'], inventoryRetries: { every: 'P1D', max: 5 }, finalAction: 'fail' });
    const admin = { authorization: `Bearer ${await t.sessionToken(s.domain)}` };
    const mine = { paymentRetries: ['PT12H', 'P2D'], inventoryRetries: { every: 'P2D', max: 2 }, finalAction: 'pause' };
    const put = await t.inject({ method: 'PUT', url: '/admin/api/billing-policy', headers: admin, payload: mine });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual(mine);
    expect((await t.inject({ url: '/admin/api/billing-policy', headers: admin })).json()).toEqual(mine);
    expect((await t.inject({ url: '/api/v1/billing-policy', headers: bearer(s.key) })).json()).toEqual(mine);
  });

  it('a read-only key reads attempts, upcoming renewals and the policy', async () => {
    const ro = await t.shopWithKey('enterprise', { access: 'read_only' });
    const c = await insertContract(t, ro.shopId);
    for (const url of [`${API}/${c.id}/billing-attempts`, '/api/v1/billing-attempts', `${API}/${c.id}/upcoming`, '/api/v1/billing-policy']) {
      expect((await t.inject({ url, headers: bearer(ro.key) })).statusCode, url).toBe(200);
    }
  });

  it('billing events go out to webhook endpoints like every contract event', async () => {
    const created = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/renewals', events: ['billing.succeeded', 'billing.attempted'] } });
    expect(created.statusCode, created.body).toBe(201);
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await worker.tick();
    await t.billing.scheduler.runAll();
    const rows = await sql<{ type: string; contract: { billing: { lastAttempt: { status: string } } } }>(t, `SELECT type, contract FROM webhook_deliveries WHERE contract_id = $1 ORDER BY id`, [c.id]);
    expect(rows.map((r) => [r.type, r.contract.billing.lastAttempt.status])).toEqual([
      ['billing.attempted', 'pending'],
      ['billing.succeeded', 'succeeded'],
    ]);
  });
});

describe('MCP: bill_now, list_billing_attempts, get_upcoming_renewals', () => {
  it('bill_now answers the contract and its attempt; the read tools answer what the API does; a read-only key may not bill', async () => {
    const base = await listen(t);
    const client = await mcpClient(base, key);
    const ro = await t.shopWithKey('enterprise', { access: 'read_only' });
    const roClient = await mcpClient(base, ro.key);
    try {
      const c = await insertContract(t, shopId);
      const billed = toolOk(await client.callTool({ name: 'bill_now', arguments: { contractId: c.id } }));
      expect(billed.billingAttempt).toMatchObject({ contractId: c.id, status: 'pending', trigger: 'bill_now' });
      expect(billed.contract.billing.lastAttempt).toEqual(billed.billingAttempt);
      expect(toolError(await client.callTool({ name: 'bill_now', arguments: { contractId: c.id } })).code).toBe('billing_in_progress');
      await t.billing.scheduler.runAll();

      const listed = toolOk(await client.callTool({ name: 'list_billing_attempts', arguments: { contractId: c.id } }));
      expect(listed).toEqual((await t.inject({ url: `${API}/${c.id}/billing-attempts`, headers: bearer(key) })).json());
      expect(listed.billingAttempts[0]).toMatchObject({ status: 'succeeded', order: { name: expect.stringMatching(/^#1\d{3}$/) } });
      const shopWide = toolOk(await client.callTool({ name: 'list_billing_attempts', arguments: { status: 'succeeded' } }));
      expect(shopWide.billingAttempts.map((a: { id: string }) => a.id)).toContain(listed.billingAttempts[0].id);

      const upcoming = toolOk(await client.callTool({ name: 'get_upcoming_renewals', arguments: { contractId: c.id, count: 2 } }));
      expect(upcoming).toEqual((await t.inject({ url: `${API}/${c.id}/upcoming?count=2`, headers: bearer(key) })).json());
      expect(upcoming.upcoming[0].date).toBe('2026-12-22T10:00:00.000Z');

      const theirs = await insertContract(t, ro.shopId);
      expect(toolError(await roClient.callTool({ name: 'bill_now', arguments: { contractId: theirs.id } })).code).toBe('insufficient_scope');
      expect(toolOk(await roClient.callTool({ name: 'get_upcoming_renewals', arguments: { contractId: theirs.id } })).upcoming).toHaveLength(6);
    } finally {
      await client.close();
      await roClient.close();
    }
  });
});

describe('metrics', () => {
  it('GET /metrics counts the billing worker\'s attempts, missed cycles and hand-overs', async () => {
    const stats = { ticks: 3, attempted: 7, missed: 2, submitted: 7, submitFailures: 1, failures: 0 };
    const m = await startTestApp({ database: t.database, clock: t.clock, appDeps: { metrics: { billingStats: () => stats } } });
    try {
      const text = (await m.inject({ url: '/metrics' })).body;
      expect(text).toMatch(/^svc_billing_attempts_total 7$/m);
      expect(text).toMatch(/^svc_billing_missed_total 2$/m);
      expect(text).toMatch(/^svc_billing_submitted_total 7$/m);
      expect(text).toMatch(/^svc_billing_submit_failures_total 1$/m);
    } finally {
      await m.app.close();
    }
  });
});
