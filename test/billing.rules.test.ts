import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, insertContract, sql } from './support/fixtures.js';
import { BillingWorker } from '../src/workers/billing.js';
import { changeContract } from '../src/services/changeContract.js';
import { recordBillingOutcome } from '../src/services/recordBillingOutcome.js';
import { claimDueContracts } from '../src/db/billingRows.js';
import { billingDueAt } from '../src/domain/commands/billingSteps.js';
import type { AttemptState, AttemptStatus } from '../src/domain/billing.js';
import { ContractStatus } from '../src/domain/contract.js';

/**
 * The rules of renewals that are written once and used in several places: when a contract is due (the code's
 * billingDueAt and the database's generated billing_due_at, which the worker's claim reads), when a cycle is too late
 * to bill (the worker's choice of command and both commands), which statuses the billing commands start from, and the
 * check of an outcome's input.
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const DAY = 86_400_000;
const MAX_LATE = 3 * DAY;
let t: TestApp;
let shopId: string;

beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(async () => {
  t.clock.set(NOW);
  ({ shopId } = await t.shopWithKey());
});
afterAll(() => t.close());

const attemptOf = (status: AttemptStatus): AttemptState => ({
  id: '00000000-0000-4000-8000-00000000000a',
  cycleDate: new Date(NOW.getTime() - DAY).toISOString(),
  attempt: 1,
  trigger: 'schedule',
  status,
  errorCode: null,
  platformErrorCode: null,
  errorMessage: null,
  nextActionUrl: null,
  order: null,
  amount: { amount: '48.00', currencyCode: 'EUR' },
  createdAt: new Date(NOW.getTime() - DAY).toISOString(),
  completedAt: null,
});

const attempts = (id: string) => sql<{ id: string; status: string }>(t, `SELECT id::text, status FROM billing_attempts WHERE contract_id = $1`, [id]);

describe('due: one definition in the code, the same as the database keeps', () => {
  it('billingDueAt agrees with billing_due_at for every status, every state of the last attempt, with and without a retry', async () => {
    const lastAttempts: { name: string; value: AttemptState | null; jsonNull?: true; noStatus?: true }[] = [
      { name: 'none (SQL NULL)', value: null },
      { name: 'none (JSON null)', value: null, jsonNull: true },
      { name: 'without a status', value: null, noStatus: true },
      ...(['pending', 'succeeded', 'failed', 'action_required'] as const).map((s) => ({ name: s, value: attemptOf(s) })),
    ];
    const cases: { id: string; label: string }[] = [];
    for (const status of ContractStatus.options) {
      for (const last of lastAttempts) {
        for (const retryAt of [null, new Date(NOW.getTime() + DAY)]) {
          const c = await insertContract(t, shopId, {
            status,
            nextBillingDate: new Date(NOW.getTime() - 1),
            billingNextAttemptAt: retryAt,
            billingCycleDate: retryAt && new Date(NOW.getTime() - DAY),
            billingLastAttempt: last.value,
          });
          if (last.jsonNull) await sql(t, `UPDATE subscription_contracts SET billing_last_attempt = 'null'::jsonb WHERE id = $1`, [c.id]);
          if (last.noStatus) await sql(t, `UPDATE subscription_contracts SET billing_last_attempt = '{"id": "x"}'::jsonb WHERE id = $1`, [c.id]);
          cases.push({ id: c.id, label: `${status}, last attempt ${last.name}, ${retryAt ? 'retry scheduled' : 'no retry'}` });
        }
      }
    }
    const stored = new Map(
      (await sql<{ id: string; due: Date | null }>(t, `SELECT id::text, billing_due_at AS due FROM subscription_contracts WHERE shop_id = $1`, [shopId])).map((r) => [r.id, r.due]),
    );
    let due = 0;
    for (const c of cases) {
      const code = billingDueAt(await contractRow(t, c.id));
      const database = stored.get(c.id) ?? null;
      expect(code && new Date(code).toISOString(), c.label).toBe(database && new Date(database).toISOString());
      if (code) due++;
    }
    // Both sides of the rule were met: ACTIVE and not pending (SQL NULL, JSON null, no status, three settled states).
    expect(due).toBe(6 * 2);
  });
});

describe('too late to bill: one definition for the worker and both commands', () => {
  it('a scheduled cycle exactly the allowed lateness late is billed; a millisecond later it is missed; a retry is billed however old its cycle', async () => {
    const worker = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: MAX_LATE, concurrency: 2, shopId });
    const onTime = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - MAX_LATE) });
    const late = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - MAX_LATE - 1) });
    const retry = await insertContract(t, shopId, {
      nextBillingDate: new Date(NOW.getTime() - 10 * DAY),
      billingStatus: 'retrying',
      billingFailedAttempts: 1,
      billingCycleDate: new Date(NOW.getTime() - 10 * DAY),
      billingNextAttemptAt: new Date(NOW.getTime() - 1),
      billingLastAttempt: { ...attemptOf('failed'), cycleDate: new Date(NOW.getTime() - 10 * DAY).toISOString() },
    });
    expect(await worker.tick()).toMatchObject({ attempted: 2, missed: 1 });
    const types = async (id: string) => (await eventRows(t, id)).map((e) => e.type);
    expect(await types(onTime.id)).toEqual(['billing.attempted']);
    expect(await types(late.id)).toEqual(['billing.missed']);
    expect(await types(retry.id)).toEqual(['billing.attempted']);
    expect((await contractRow(t, retry.id)).billingLastAttempt).toMatchObject({ trigger: 'retry', attempt: 2 });
    await t.billing.scheduler.runAll();
  });
});

describe('the billing commands start from ACTIVE only, and check what they are given', () => {
  it('bill and billing_missed on a contract paused since the worker read it: 409 invalid_state, nothing billed or recorded', async () => {
    for (const command of [
      { name: 'bill' as const, input: { attemptId: '00000000-0000-4000-8000-000000000001', maxLateMs: MAX_LATE } },
      { name: 'billing_missed' as const, input: { maxLateMs: 0 } },
    ]) {
      const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
      const [read] = await claimDueContracts(t.ctx.db, { now: NOW, until: new Date(NOW.getTime() + 60_000), limit: 10, shopId });
      expect(read.id).toBe(c.id);
      await sql(t, `UPDATE subscription_contracts SET status = 'PAUSED', paused_at = $2, version = version + 1 WHERE id = $1`, [c.id, NOW]);
      await expect(changeContract(t.ctx, { shopId, contractId: c.id, read, request: { command, actor: { type: 'billing' } } })).rejects.toMatchObject({ code: 'invalid_state' });
      expect(await attempts(c.id)).toEqual([]);
      expect(await eventRows(t, c.id)).toEqual([]);
      await sql(t, `UPDATE subscription_contracts SET status = 'CANCELLED' WHERE id = $1`, [c.id]);
    }
  });

  it('an outcome that is not one (an unknown failure code, a missing order) is refused as invalid_request, and the attempt stays pending', async () => {
    const worker = new BillingWorker(t.ctx, { intervalMs: 1000, maxLateMs: MAX_LATE, concurrency: 2, shopId });
    const c = await insertContract(t, shopId, { nextBillingDate: new Date(NOW.getTime() - 1_000) });
    await worker.tick();
    const [attempt] = await attempts(c.id);
    expect(attempt.status).toBe('pending');
    for (const outcome of [
      { kind: 'failed', errorCode: 'card_melted', platformErrorCode: null, message: null },
      { kind: 'succeeded' },
      { kind: 'refunded' },
    ]) {
      await expect(recordBillingOutcome(t.ctx, { shopId, attemptId: attempt.id, outcome: outcome as never })).rejects.toMatchObject({ code: 'invalid_request' });
    }
    expect((await attempts(c.id))[0].status).toBe('pending');
    expect((await eventRows(t, c.id)).map((e) => e.type)).toEqual(['billing.attempted']);
    // The gateway's own outcome is still taken.
    await t.billing.scheduler.runAll();
    expect((await attempts(c.id))[0].status).toBe('succeeded');
  });
});
